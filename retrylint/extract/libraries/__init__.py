"""One extractor per retry library; each builds the same RetryPolicy as hand-written loops."""

from __future__ import annotations

from . import (
    backoff,
    botocore_config,
    coredis_retry,
    google_api_core,
    http_clients,
    imported_factories,
    redis_retry,
    retry_package,
    retrying,
    stamina,
    task_queues,
    tenacity,
)

#: (name, module): each module has ``extract(ctx)`` and ``TRIGGER``.
LIBRARIES = (
    ("tenacity", tenacity),
    ("backoff", backoff),
    ("stamina", stamina),
    ("retrying", retrying),
    ("retry", retry_package),
    ("http-clients", http_clients),
    ("task-queues", task_queues),
    ("redis", redis_retry),
    ("coredis", coredis_retry),
    ("google-api-core", google_api_core),
    ("botocore", botocore_config),
    ("imported-factories", imported_factories),
)

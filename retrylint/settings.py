"""Resolved settings that the engine and the rules read (see config.py for loading them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Tuple

#: RTY204 fires when an uncapped exponential delay can reach more than this many seconds.
#: Two minutes: the doctrine caps single delays at 20-30 s, "at most a few minutes",
#: and urllib3's own backoff_max default is 120 s.
DEFAULT_MAX_DELAY = 120.0

#: Exceptions that do not heal with time (RETRY_DOCTRINE.md §3).  Qualified names as
#: libcst resolves them; builtins without the ``builtins.`` prefix.
DEFAULT_PERMANENT_EXCEPTIONS: Tuple[str, ...] = (
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "LookupError",
    "UnicodeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "NotImplementedError",
    "PermissionError",
    "FileNotFoundError",
    "IsADirectoryError",
    "NotADirectoryError",
    "json.JSONDecodeError",
    "json.decoder.JSONDecodeError",
    "simplejson.JSONDecodeError",
    "simplejson.errors.JSONDecodeError",
    "simplejson.scanner.JSONDecodeError",
    "jsonschema.ValidationError",
    "jsonschema.exceptions.ValidationError",
    "jsonschema.SchemaError",
    "jsonschema.exceptions.SchemaError",
    "pydantic.ValidationError",
    "pydantic_core.ValidationError",
    "pydantic.error_wrappers.ValidationError",
    "marshmallow.ValidationError",
    "marshmallow.exceptions.ValidationError",
    "django.core.exceptions.ValidationError",
    "django.core.exceptions.ObjectDoesNotExist",
    # A Django model's own lookup error: ``Order.DoesNotExist``.
    "DoesNotExist",
    "django.core.exceptions.PermissionDenied",
    "requests.exceptions.InvalidURL",
    "requests.exceptions.MissingSchema",
    "requests.exceptions.InvalidSchema",
    "requests.exceptions.InvalidHeader",
    "httpx.InvalidURL",
    "httpx.UnsupportedProtocol",
)


#: What names a dead-letter queue (RETRY_DOCTRINE.md §4), searched case-insensitively in
#: queue names, topic names, routing keys and the names of variables that hold them:
#: ``orders-dlq``, ``orders.DLQ``, ``DEAD_LETTER_QUEUE_URL``, ``deadletter``, a RabbitMQ
#: dead-letter exchange (``dlx``), Service Bus ``orders/$DeadLetterQueue``, Azure's
#: ``-poison`` queues and parking-lot queues.
DEFAULT_DEAD_LETTER_PATTERN = r"dlq|dlx|dead[-_. ]?letter|poison|parking[-_. ]?lot"

#: Names under which a dead letter carries its context (RTY402). A payload key, header,
#: attribute or variable name carries a field when the field's words appear in it in
#: order: ``error_message`` carries ``error``, ``ApproximateReceiveCount`` carries
#: ``receive_count``, ``x-first-seen-at`` carries ``first_seen``.
DEFAULT_DEAD_LETTER_REASON_FIELDS: Tuple[str, ...] = (
    "reason", "error", "errors", "err", "exception", "exc", "status", "cause", "failure", "traceback", "fault",
)
DEFAULT_DEAD_LETTER_ATTEMPT_FIELDS: Tuple[str, ...] = (
    "attempts", "attempt", "retries", "retry", "tries", "delivery_count", "receive_count",
    "redeliveries", "redelivery_count",
)
DEFAULT_DEAD_LETTER_FIRST_RECEIVED_FIELDS: Tuple[str, ...] = (
    "first_received", "first_seen", "received_at", "enqueued_at", "enqueued_time", "first_attempt",
    "first_failed", "first_failure", "original_timestamp",
)


@dataclass(frozen=True)
class Settings:
    #: Codes whose findings are reported.
    enabled: FrozenSet[str] = frozenset()
    max_delay: float = DEFAULT_MAX_DELAY
    permanent_exceptions: Tuple[str, ...] = DEFAULT_PERMANENT_EXCEPTIONS
    #: Names the user declares transient: never treated as permanent.
    transient_exceptions: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, FrozenSet[str]], ...] = field(default=())
    exclude: Tuple[str, ...] = ()
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True
    #: A regular expression (case-insensitive) for dead-letter queue names (RTY4xx).
    dead_letter_pattern: str = DEFAULT_DEAD_LETTER_PATTERN
    dead_letter_reason_fields: Tuple[str, ...] = DEFAULT_DEAD_LETTER_REASON_FIELDS
    dead_letter_attempt_fields: Tuple[str, ...] = DEFAULT_DEAD_LETTER_ATTEMPT_FIELDS
    dead_letter_first_received_fields: Tuple[str, ...] = DEFAULT_DEAD_LETTER_FIRST_RECEIVED_FIELDS

    def is_permanent(self, qualified_name: str) -> bool:
        if _matches(qualified_name, self.transient_exceptions):
            return False
        return _matches(qualified_name, self.permanent_exceptions)


def _matches(name: str, names: Tuple[str, ...]) -> bool:
    """A configured name matches the qualified name, or its trailing dotted parts.

    Users write ``ValidationError`` or ``myapp.errors.ValidationError``; libcst
    resolves ``from myapp.errors import ValidationError`` to the latter.
    """
    for candidate in names:
        if name == candidate or name.endswith("." + candidate):
            return True
    return False

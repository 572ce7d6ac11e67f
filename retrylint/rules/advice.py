"""What to do about a finding, in the terms of the library that wrote the policy."""

from __future__ import annotations

from ..model import RetryPolicy

_ADVICE = {
    "RTY201": {
        "tenacity": "add `wait=wait_random_exponential(multiplier=0.5, max=20)`",
        "backoff": "use `backoff.expo` (full jitter is the default)",
        "retrying": "add `wait_exponential_multiplier=500, wait_exponential_max=20000, wait_jitter_max=1000`",
        "retry": "set `delay=0.5, backoff=2, max_delay=20, jitter=(0, 1)`",
        "urllib3": "set `backoff_factor=0.5` and `backoff_jitter=1`",
        "requests": "pass `max_retries=Retry(total=5, backoff_factor=0.5, backoff_jitter=1)`",
        "redis": "use `FullJitterBackoff(cap=5, base=0.1)`",
        "": "wait with exponential backoff and jitter, e.g. `time.sleep(random.uniform(0, min(20, 2 ** attempt)))`",
    },
    "RTY202": {
        "tenacity": "use `wait=wait_random_exponential(multiplier=1, max=20)`",
        "backoff": "use `backoff.expo` with `max_value=20`",
        "retrying": "use `wait_exponential_multiplier` with `wait_exponential_max` and `wait_jitter_max`",
        "retry": "set `backoff=2, max_delay=20, jitter=(0, 1)`",
        "celery": "set `retry_backoff=True` (jittered, capped at `retry_backoff_max`)",
        "redis": "use `FullJitterBackoff(cap=5, base=0.1)`",
        "": "back off exponentially with jitter and a cap, e.g. `random.uniform(0, min(20, base * 2 ** attempt))`",
    },
    "RTY203": {
        "tenacity": "use `wait_random_exponential(...)` with the same arguments (full jitter)",
        "backoff": "remove `jitter=None` (full jitter is backoff's default)",
        "retrying": "add `wait_jitter_max=` (in ms)",
        "retry": "set `jitter=(0, 1)` (a tuple adds a random amount)",
        "urllib3": "set `backoff_jitter=` (e.g. 1.0)",
        "httpx": "retry in your own code with jitter, or use a jittered policy around the call",
        "celery": "keep `retry_jitter=True`, or draw the countdown at random (`random.uniform(0, ...)`)",
        "redis": "use `FullJitterBackoff` or `EqualJitterBackoff` instead of `ExponentialBackoff`",
        "": "add full jitter, e.g. `random.uniform(0, delay)`",
    },
    "RTY204": {
        "tenacity": "pass `max=20` to the wait",
        "backoff": "pass `max_value=20`",
        "retrying": "set `wait_exponential_max=20000`",
        "retry": "set `max_delay=20`",
        "botocore": 'use `"mode": "standard"` (capped at 20 s) or fewer attempts',
        "httpx": "use fewer retries",
        "": "cap it, e.g. `min(20, base * 2 ** attempt)`",
    },
}


def advice(code: str, policy: RetryPolicy) -> str:
    table = _ADVICE[code]
    return table.get(policy.source, table[""])

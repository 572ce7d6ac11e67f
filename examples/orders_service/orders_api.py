"""The downstream both consumers call: the orders API, over plain HTTP.

It only sorts failures; deciding whether and when to try again is the consumer's job.
Transient (worth another attempt): no answer, 5xx, 408 and 429 (with its ``Retry-After``).
Permanent (fails the same way every time): every other 4xx.
"""

from __future__ import annotations

import email.utils
import json
import time
import urllib.error
import urllib.request
from typing import Any, Optional

TRANSIENT_STATUSES = frozenset({408, 429})


class OrdersApiError(Exception):
    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class TransientError(OrdersApiError):
    """Worth another attempt; ``retry_after`` is how long the API asked us to wait, if it did."""

    def __init__(self, message: str, status: Optional[int] = None, retry_after: Optional[float] = None) -> None:
        super().__init__(message, status)
        self.retry_after = retry_after


class PermanentError(OrdersApiError):
    """A 4xx: the same request fails the same way however often it is sent."""


class OrdersApi:
    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def submit(self, order: Any) -> Any:
        """POST one order; returns the decoded answer or raises TransientError/PermanentError."""
        request = urllib.request.Request(
            f"{self.base_url}/orders",
            data=json.dumps(order).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
            if status >= 500 or status in TRANSIENT_STATUSES:
                raise TransientError(f"HTTP {status}", status, parse_retry_after(exc.headers.get("Retry-After"))) from None
            raise PermanentError(f"HTTP {status}", status) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            raise TransientError(f"no answer: {exc}") from None
        return json.loads(body) if body else None


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` as seconds from now: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)

"""A client in the style of an LLM SDK: tenacity policies on methods."""

from __future__ import annotations

import logging

import httpx
from tenacity import (
    retry,
    retry_if_exception_type,
    wait_exponential,
)

logger = logging.getLogger(__name__)


class Client:
    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url)

    @retry(
        wait=wait_exponential(multiplier=1, min=4, max=10),  # back off between calls
        retry=retry_if_exception_type(httpx.TransportError),
    )
    def complete(self, prompt: str) -> dict:
        logger.debug("completing %s", prompt)
        return self.http.post("/complete", json={"prompt": prompt}).json()

import httpx
import tenacity


def fetch(url: str) -> bytes:
    for attempt in tenacity.Retrying(
        stop=tenacity.stop_after_attempt(5),
        wait=tenacity.wait_exponential(multiplier=0.5),
        retry=tenacity.retry_if_exception_type(httpx.TransportError),
    ):
        with attempt:
            return httpx.get(url).content
    raise AssertionError("unreachable")

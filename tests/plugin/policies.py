"""Retry policies shared by the plugin's tests."""

import tenacity


def tenacity_good():
    """The doctrine's shape: bounded (6 attempts or 60 s), full jitter, capped at 20 s, transient only."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(6) | tenacity.stop_after_delay(60),
        wait=tenacity.wait_random_exponential(multiplier=1, max=20),
        retry=tenacity.retry_if_exception_type(ConnectionError),
        reraise=True,
    )

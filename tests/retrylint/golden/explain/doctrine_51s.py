"""RETRY_DOCTRINE.md §2: base 1 s, factor 2, cap 20 s, 6 retries → 1, 2, 4, 8, 16, 20 = 51 s."""
import random
import time

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential, wait_random_exponential


@retry(stop=stop_after_attempt(7), wait=wait_exponential(multiplier=1, max=20),
       retry=retry_if_exception_type(ConnectionError))
def tenacity_no_jitter(): ...


@retry(stop=stop_after_attempt(7), wait=wait_random_exponential(multiplier=1, max=20),
       retry=retry_if_exception_type(ConnectionError))
def tenacity_full_jitter(): ...


def hand_written(call):
    for attempt in range(7):
        try:
            return call()
        except ConnectionError:
            if attempt == 6:
                raise
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))

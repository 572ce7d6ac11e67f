import time


def fetch(call, random):
    """``random`` is the caller's generator: a fix must not write ``random.uniform`` here."""
    for attempt in range(5):
        try:
            return call()
        except ConnectionError:
            time.sleep(2**attempt)
    raise RuntimeError("gave up")

"""Nothing imported at the top: the import goes after the docstring."""


def fetch(call):
    import time

    for attempt in range(5):
        try:
            return call()
        except ConnectionError:
            time.sleep(2**attempt)
    raise RuntimeError("gave up")

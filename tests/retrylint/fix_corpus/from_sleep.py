from time import sleep

import requests


def download(url: str) -> bytes:
    for attempt in range(5):
        try:
            return requests.get(url, timeout=10).content
        except requests.ConnectionError:
            sleep(2**attempt)
    raise RuntimeError(url)

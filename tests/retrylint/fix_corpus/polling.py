import logging
import time

import requests

log = logging.getLogger(__name__)


def wait_until_ready(url: str) -> requests.Response:
    for attempt in range(6):
        try:
            return requests.get(url, timeout=2)
        except requests.ConnectionError:
            log.info("not ready yet (attempt %d)", attempt)
            time.sleep(2**attempt)
    raise TimeoutError(url)

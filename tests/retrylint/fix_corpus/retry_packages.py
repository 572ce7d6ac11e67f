import backoff
from retry import retry
from retrying import retry as retrying_retry


@retry(ConnectionError, tries=5, delay=1, backoff=2)
def ping() -> None: ...


@retrying_retry(stop_max_attempt_number=5, wait_exponential_multiplier=1000)
def pong() -> None: ...


@backoff.on_exception(backoff.expo, ConnectionError)
def pang() -> None: ...

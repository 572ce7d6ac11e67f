import time

import backoff
import stamina
from redis.backoff import DecorrelatedJitterBackoff
from redis.retry import Retry as RedisRetry
from urllib3.util import Retry


def forever(call):
    while True:
        try:
            return call()
        except OSError:
            time.sleep(5)


@backoff.on_exception(backoff.expo, OSError, max_time=60, max_value=30)
def deadline_only(): ...


@stamina.retry(on=ConnectionError)
def stamina_defaults(): ...


HTTP = Retry(total=5, backoff_factor=0.5, status_forcelist=[429, 503])
REDIS = RedisRetry(DecorrelatedJitterBackoff(cap=10, base=1), 4)


def linear(call):
    for attempt in range(1, 5):
        try:
            return call()
        except OSError:
            time.sleep(attempt * 3)

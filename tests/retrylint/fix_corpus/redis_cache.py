from redis import Redis
from redis.backoff import (
    ExponentialBackoff,
    NoBackoff,
)
from redis.retry import Retry

FAST = Retry(NoBackoff(), 1)


def connect(host: str) -> Redis:
    return Redis(host=host, retry=Retry(ExponentialBackoff(cap=10, base=0.1), 3))

import backoff
import requests


@backoff.on_exception(
    backoff.expo,
    requests.ConnectionError,
    max_value=30,
    jitter=None,  # deterministic delays for the logs
)
def publish(event: dict) -> None:
    requests.post("https://events.example.com", json=event, timeout=5)

"""A small service module with the retry mistakes retrylint exists to catch.

Run ``retrylint check examples/retry_smells.py`` to see them, and
``retrylint explain examples/retry_smells.py`` for each retry's worst case.
"""

import json
import logging
import random
import time

import requests

log = logging.getLogger(__name__)
ORDERS_URL = "https://orders.internal/api/orders"


def fetch_order(order_id):
    # "Immediately, at a fixed interval, forever": the seed incident's retry.
    while True:
        try:
            response = requests.get(f"{ORDERS_URL}/{order_id}", timeout=5)
            response.raise_for_status()
            return response.json()
        except Exception:
            log.warning("fetch failed, retrying")
            time.sleep(0.1)


def publish(client, event):
    delay = 0.5
    for attempt in range(30):
        try:
            return client.publish(json.dumps(event))
        except (ConnectionError, ValueError):
            time.sleep(delay)  # everyone doubles in lock-step, up to hours apart
            delay *= 2
    raise RuntimeError("publish failed")


def wait_for_inventory(sku):
    for attempt in range(10):
        response = requests.get(f"https://inventory.internal/sku/{sku}", timeout=5)
        if response.status_code == 200:
            return response.json()
        time.sleep(random.uniform(0, min(30, 2 ** attempt)))  # 404 is retried too
    return None


def charge(gateway, payment):
    try:
        return gateway.charge(payment)
    except TimeoutError:
        return charge(gateway, payment)


def fetch_profile(user_id):
    # The shape to copy: bounded, exponential backoff with full jitter and a cap,
    # transient errors only, 4xx raised at once.
    for attempt in range(6):
        try:
            response = requests.get(f"https://profiles.internal/{user_id}", timeout=5)
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
            continue
        if response.status_code in (429, 500, 502, 503, 504):
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
            continue
        response.raise_for_status()
        return response.json()
    raise RuntimeError(f"profile {user_id}: gave up after 6 attempts")

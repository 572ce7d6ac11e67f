"""A consumer whose retry outlives the SQS visibility timeout (RTY502) and retries a charge with no idempotency key (RTY503)."""

import json

import boto3
import requests
import tenacity

sqs = boto3.client("sqs")


@tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
def charge(order):
    return requests.post("https://payments.example/v1/charges", json=order, timeout=10)


def consume(queue_url):
    while True:
        resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
        for message in resp.get("Messages", []):
            charge(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

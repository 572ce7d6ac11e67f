"""The DLQ rules end to end: ``retrylint check`` on a small service with the three mistakes."""

from __future__ import annotations

import json

from .conftest import codes

SERVICE = '''
import json, time
import boto3, click, pika

sqs = boto3.client("sqs")
DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"
QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"


def consume():
    while True:
        resp = sqs.receive_message(QueueUrl=QUEUE_URL, WaitTimeSeconds=20)
        for message in resp.get("Messages", []):
            try:
                handle(message["Body"])
            except Exception:
                sqs.send_message(QueueUrl=DLQ_URL, MessageBody=message["Body"])
            sqs.delete_message(QueueUrl=QUEUE_URL, ReceiptHandle=message["ReceiptHandle"])


def requeue(ch, method, properties, body):
    ch.basic_publish(exchange="", routing_key="orders", body=body)
    ch.basic_ack(method.delivery_tag)


@click.command()
def replay():
    while True:
        resp = sqs.receive_message(QueueUrl=DLQ_URL, MaxNumberOfMessages=10)
        if not resp.get("Messages"):
            break
        for m in resp["Messages"]:
            sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=m["Body"])
            sqs.delete_message(QueueUrl=DLQ_URL, ReceiptHandle=m["ReceiptHandle"])


channel = pika.BlockingConnection().channel()
channel.basic_consume(queue="orders.dlq", on_message_callback=requeue)
'''


def test_each_mistake_is_reported_where_it_is(project, run):
    project.write("service.py", SERVICE)
    code, out, _ = run("check", "--select", "RTY4", "service.py")
    assert code == 1
    assert codes(out) == ["RTY402", "RTY401", "RTY403"]
    lines = out.splitlines()
    assert any(l.startswith("service.py:16:17: RTY402 dead letter sent to `DLQ_URL` without the failure reason") for l in lines)
    assert any(l.startswith("service.py:21:5: RTY401 dead letters from `orders.dlq` are re-published to `orders`") for l in lines)
    assert any(l.startswith("service.py:27:5: RTY403 replay of `DLQ_URL` into `QUEUE_URL` (`while True`)") for l in lines)


def test_noqa_on_the_reported_lines(project, run):
    fixed = (
        SERVICE.replace('MessageBody=message["Body"])', 'MessageBody=message["Body"])  # noqa: RTY402')
        .replace('routing_key="orders", body=body)', 'routing_key="orders", body=body)  # noqa: RTY401')
        .replace("    while True:\n        resp = sqs.receive_message(QueueUrl=DLQ_URL", "    while True:  # noqa: RTY403\n        resp = sqs.receive_message(QueueUrl=DLQ_URL")
    )
    project.write("service.py", fixed)
    code, out, _ = run("check", "--select", "RTY4", "service.py")
    assert code == 0, out


def test_noqa_on_the_publish_call_of_a_replay_loop(project, run):
    project.write("service.py", SERVICE.replace('MessageBody=m["Body"])', 'MessageBody=m["Body"])  # noqa: RTY403'))
    assert "RTY403" not in codes(run("check", "--select", "RTY4", "service.py")[1])


def test_json_output_and_rule_docs(project, run):
    project.write("service.py", SERVICE)
    _, out, _ = run("check", "--select", "RTY403", "--output-format", "json", "service.py")
    [finding] = json.loads(out)
    assert finding["code"] == "RTY403" and finding["location"] == {"row": 27, "column": 5}
    assert finding["end_location"]["row"] == 27
    _, out, _ = run("rule", "RTY402")
    assert "dead-letter-without-context" in out and "## Why is this bad?" in out
    _, out, _ = run("rule", "--all")
    assert all(code in out for code in ("RTY401", "RTY402", "RTY403"))

"""The fake queue: visibility timeouts, ack/nack, heartbeats and the dead-letter policy, on the
fake clock; driven directly, by competing workers, through kombu and through a real botocore
SQS client."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_retry_check import FakeBroker, FakeClock, FakeQueue, RedeliveryCheckFailed
from pytest_retry_check import clock as clock_module
from pytest_retry_check.redelivery import MessageNotInflight, QueueError, ReceiptHandleIsInvalid

pytest_plugins = ["pytester"]


def real_monotonic():
    # Through the module: a name bound here to the real monotonic is itself faked by freezegun.
    return clock_module.real_monotonic()


# -- the queue on its own -----------------------------------------------------------------------
def test_a_message_comes_back_when_its_visibility_runs_out(fake_queue, fake_clock):
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send({"id": 1})
    first = orders.receive_one()
    assert first.body == {"id": 1} and first.receive_count == 1
    time.sleep(29.9)
    assert orders.receive_one() is None  # still invisible
    time.sleep(0.1)
    again = orders.receive_one()
    assert again is not None and again.message_id == first.message_id
    assert again.receive_count == 2 and again.redelivered
    assert again.first_received_at == 0.0 and again.received_at == 30.0


def test_an_ack_in_time_deletes_the_message(fake_queue):
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send("a")
    delivery = orders.receive_one()
    time.sleep(29)
    delivery.ack()
    time.sleep(100)
    assert orders.receive_one() is None and orders.idle()
    orders.assert_delivered_once()
    assert [r.ended for r in orders.deliveries] == ["acked"]


def test_an_ack_after_the_message_was_delivered_again_deletes_nothing(fake_queue):
    # SQS: only the latest receipt handle deletes; an older one "succeeds" and deletes nothing.
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send("a")
    slow = orders.receive_one()
    time.sleep(45)  # the handler took 45 s
    other = orders.receive_one()  # another consumer got it at +45 s
    slow.ack()
    assert len(orders) == 1, "a stale receipt must not delete the message"
    other.ack()
    assert orders.idle()
    assert [r.ended for r in orders.deliveries] == ["stale-ack", "acked"]
    with pytest.raises(RedeliveryCheckFailed) as failure:
        orders.assert_delivered_once()
    message = str(failure.value)
    assert "1 of 1 message(s) were delivered more than once" in message
    assert "delivery #1 at +0.000 s, visible again at +30.000 s: acked after 45.000 s, but the message had been delivered again" in message
    assert "heartbeat" in message


def test_an_ack_after_the_visibility_ran_out_is_reported_even_with_one_consumer(fake_queue):
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send("a")
    delivery = orders.receive_one()
    time.sleep(45)
    delivery.ack()  # nobody else polled: deleted, but late
    assert orders.idle()
    with pytest.raises(RedeliveryCheckFailed, match=r"acked after 45.000 s, 15.000 s after its visibility ran out"):
        orders.assert_delivered_once()


def test_a_heartbeat_keeps_the_message_invisible(fake_queue):
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send("a")
    delivery = orders.receive_one()
    for _ in range(4):  # 60 s of work, a heartbeat every 15 s
        time.sleep(15)
        assert orders.receive_one() is None
        delivery.heartbeat()
    delivery.ack()
    orders.assert_delivered_once()
    assert orders.deliveries[0].heartbeats == 4 and orders.deliveries[0].visible_until == 90.0


def test_nack_and_visibility_zero_redeliver_at_once(fake_queue):
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send("a")
    orders.receive_one().nack()
    again = orders.receive_one()
    assert again is not None and again.receive_count == 2
    again.change_visibility(0)
    third = orders.receive_one()
    assert third.receive_count == 3
    third.nack(delay=10)
    assert orders.receive_one() is None
    assert (orders.visible, orders.in_flight, len(orders)) == (0, 0, 1)  # delayed, not in flight
    time.sleep(10)
    assert orders.receive_one().receive_count == 4
    assert [r.ended for r in orders.deliveries][:3] == ["nacked", "nacked", "nacked"]


def test_after_max_receive_count_the_message_moves_to_the_dead_letter_queue(fake_queue, fake_clock):
    orders = fake_queue("orders", visibility_timeout=30, max_receive_count=3)
    time.sleep(5)
    orders.send({"id": 7}, attributes={"trace": "t-1"})
    for expected in (1, 2, 3):
        delivery = orders.receive_one(wait_time=20)
        assert delivery.receive_count == expected
        time.sleep(31)  # the handler fails without a word: the visibility runs out
    assert orders.receive_one() is None  # the 4th receive moves it instead
    assert orders.idle()
    [letter] = orders.dead_letters
    assert letter.body == {"id": 7} and letter.receive_count == 3
    assert letter.first_received_at == 5.0 and letter.moved_at == fake_clock.now()
    assert "maxReceiveCount=3" in letter.reason
    dlq = fake_queue.get("orders-dlq")
    assert orders.dead_letter_queue is dlq and dlq.bodies() == [{"id": 7}]
    moved = dlq.receive_one()
    assert moved.attributes["receive_count"] == 3 and moved.attributes["first_received_at"] == 5.0
    assert moved.attributes["trace"] == "t-1" and moved.attributes["dead_letter_source"] == "orders"


def test_long_polling_waits_in_virtual_time(fake_queue, fake_clock):
    orders = fake_queue("orders")
    orders.send("later", delay=7)
    started = real_monotonic()
    assert orders.receive(wait_time=20)[0].body == "later"
    assert fake_clock.now() == 7.0
    assert orders.receive(wait_time=20) == [] and fake_clock.now() == 27.0
    assert real_monotonic() - started < 1.0  # no real waiting


def test_changing_the_visibility_of_a_finished_delivery_is_refused(fake_queue):
    orders = fake_queue("orders", visibility_timeout=30)
    orders.send("a")
    delivery = orders.receive_one()
    time.sleep(31)
    with pytest.raises(MessageNotInflight, match=r"not in flight at \+31.000 s \(its visibility ran out at \+30.000 s\)"):
        delivery.heartbeat()
    with pytest.raises(ReceiptHandleIsInvalid):
        orders.delete("made-up")
    fresh = orders.receive_one()
    time.sleep(20)
    with pytest.raises(QueueError, match="12 hours after the receive"):
        fresh.change_visibility(12 * 3600)
    with pytest.raises(QueueError):
        fake_queue("bad", max_receive_count=0)


def test_the_queue_works_on_a_timeline_without_a_fixture():
    with FakeClock() as clock:
        queue = FakeQueue("jobs", visibility_timeout=10)
        queue.send(1)
        queue.receive_one()
        clock.advance(10)
        assert queue.receive_one().receive_count == 2
    with pytest.raises(RuntimeError, match="needs a fake clock"):
        FakeQueue("no-clock").send(1)


# -- competing workers ---------------------------------------------------------------------------
def test_a_handler_slower_than_the_visibility_timeout_is_delivered_twice(fake_queue, fake_clock):
    orders = fake_queue("orders", visibility_timeout=30, max_receive_count=2)
    orders.send({"id": 1})
    handled = []

    def handle(delivery):
        handled.append((delivery.body["id"], fake_clock.now(), delivery.receive_count))
        time.sleep(45)

    started = real_monotonic()
    fake_queue.run_workers(orders, handle, workers=2)
    assert real_monotonic() - started < 5.0
    # worker-0 took it at 0; its visibility ran out at 30 s while it was still working and
    # worker-1 took it too; the third receive moved it to the DLQ.
    assert handled == [(1, 0.0, 1), (1, 30.0, 2)]
    # Both acks came after the message had moved on: neither deleted anything.
    assert [(r.worker, r.ended) for r in orders.deliveries] == [("worker-0", "stale-ack"), ("worker-1", "stale-ack")]
    assert orders.dead_letters[0].receive_count == 2 and orders.dead_letters[0].moved_at == 60.0
    with pytest.raises(RedeliveryCheckFailed) as failure:
        orders.assert_delivered_once()
    assert "delivery #2 at +30.000 s to worker-1" in str(failure.value)


def test_a_heartbeat_prevents_the_second_delivery(fake_queue, fake_clock):
    orders = fake_queue("orders", visibility_timeout=30, max_receive_count=2)
    orders.send({"id": 1})
    handled = []

    def handle(delivery):
        handled.append(delivery.body["id"])
        for _ in range(3):  # 45 s of work, extending the visibility every 15 s
            time.sleep(15)
            delivery.heartbeat()

    fake_queue.run_workers(orders, handle, workers=2)
    assert handled == [1]
    orders.assert_delivered_once()
    assert not orders.dead_letters


def test_run_concurrently_stops_workers_at_the_horizon(fake_queue, fake_clock):
    polls = []

    def poll_forever():
        while True:
            polls.append(fake_clock.now())
            time.sleep(10)

    results = fake_queue.run_concurrently(poll_forever, until=35)
    assert polls == [0.0, 10.0, 20.0, 30.0]
    assert results[0].outcome == "unfinished"


# -- kombu ---------------------------------------------------------------------------------------
def test_kombu_consumers_get_redeliveries_and_the_visibility_timeout_option(fake_queue, fake_clock):
    with fake_queue.kombu_connection(visibility_timeout=60) as connection:
        queue = connection.SimpleQueue("orders")
        queue.put({"id": 9}, headers={"x-trace": "t"})
        first = queue.get_nowait()
        assert first.payload == {"id": 9} and first.headers == {"x-trace": "t"}
        assert fake_queue.get("orders").visibility_timeout == 60.0
        with pytest.raises(queue.Empty):
            queue.get_nowait()
        time.sleep(60)
        again = queue.get_nowait()
        assert again.payload == {"id": 9} and again.delivery_info["receive_count"] == 2
        first.ack()  # stale: deletes nothing
        assert len(fake_queue.get("orders")) == 1
        again.requeue()  # reject(requeue=True): visible at once
        third = queue.get_nowait()
        fake_queue.heartbeat(third, 120)
        time.sleep(100)
        with pytest.raises(queue.Empty):
            queue.get_nowait()
        third.ack()
        assert fake_queue.get("orders").idle()
        assert [r.ended for r in fake_queue.get("orders").deliveries] == ["stale-ack", "nacked", "acked"]


def test_kombu_reject_without_requeue_discards_as_kombus_sqs_transport_does(fake_queue):
    with fake_queue.kombu_connection() as connection:
        queue = connection.SimpleQueue("jobs")
        queue.put("x")
        queue.get_nowait().reject()
        time.sleep(3600)
        with pytest.raises(queue.Empty):
            queue.get_nowait()


def test_kombu_messages_past_max_receive_count_go_to_the_dead_letter_queue(fake_queue):
    fake_queue("orders", visibility_timeout=30, max_receive_count=2, dead_letter_queue="orders.dlq")
    with fake_queue.kombu_connection() as connection:
        queue = connection.SimpleQueue("orders")
        queue.put({"id": 3})
        for _ in range(2):
            queue.get_nowait()  # never acked
            time.sleep(30)
        with pytest.raises(queue.Empty):
            queue.get_nowait()
        [letter] = fake_queue.get("orders").dead_letters
        assert letter.receive_count == 2 and letter.first_received_at == 0.0
        dead = connection.SimpleQueue("orders.dlq").get_nowait()  # kombu reads the DLQ too
        assert dead.payload == {"id": 3}


# -- botocore's real SQS client ------------------------------------------------------------------
def _queues(client, visibility=30, max_receive_count=3):
    dlq_url = client.create_queue(QueueName="orders-dlq")["QueueUrl"]
    dlq_arn = client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)})
    url = client.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": str(visibility), "RedrivePolicy": policy})["QueueUrl"]
    return url, dlq_url


def test_a_botocore_sqs_consumer_sees_redelivery_and_the_redrive_policy(fake_queue, fake_clock):
    client = fake_queue.sqs_client()
    url, dlq_url = _queues(client)
    client.send_message(QueueUrl=url, MessageBody=json.dumps({"id": 5}))
    counts = []
    while fake_clock.now() < 100:  # a consumer long-polling for 100 s
        answer = client.receive_message(QueueUrl=url, WaitTimeSeconds=20, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"])
        for message in answer.get("Messages", []):
            counts.append((fake_clock.now(), message["Attributes"]["ApproximateReceiveCount"]))
            # the handler fails; the message comes back when its 30 s visibility runs out
    assert counts == [(0.0, "1"), (30.0, "2"), (60.0, "3")]
    attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0" and json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == 3
    [dead] = client.receive_message(QueueUrl=dlq_url, AttributeNames=["All"])["Messages"]
    assert json.loads(dead["Body"]) == {"id": 5}
    assert dead["Attributes"]["DeadLetterQueueSourceArn"].endswith(":orders")
    [letter] = fake_queue.get("orders").dead_letters
    assert letter.receive_count == 3 and letter.first_received_at == 0.0


def test_a_botocore_heartbeat_and_delete_and_their_errors(fake_queue, fake_clock):
    from botocore.exceptions import ClientError

    client = fake_queue.sqs_client()
    url, _ = _queues(client)
    client.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    messages = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert sorted(m["Body"] for m in messages) == ["m0", "m1", "m2"]
    for _ in range(3):  # 60 s of work on the first, a heartbeat every 20 s
        time.sleep(20)
        client.change_message_visibility(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=30)
    back = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert sorted(m["Body"] for m in back) == ["m1", "m2"]  # the two without a heartbeat
    client.delete_message(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"])
    result = client.delete_message_batch(QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": back[0]["ReceiptHandle"]}, {"Id": "b", "ReceiptHandle": "nope"}])
    assert [e["Id"] for e in result["Successful"]] == ["a"] and result["Failed"][0]["Code"] == "ReceiptHandleIsInvalid"
    with pytest.raises(ClientError) as error:
        client.change_message_visibility(QueueUrl=url, ReceiptHandle=messages[1]["ReceiptHandle"], VisibilityTimeout=10)
    assert error.value.response["Error"]["Code"] in ("MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight")
    with pytest.raises(ClientError) as error:
        client.get_queue_url(QueueName="missing")
    assert "NonExistentQueue" in error.value.response["Error"]["Code"] or "QueueDoesNotExist" in error.value.response["Error"]["Code"]
    with pytest.raises(Exception, match="MaxNumberOfMessages"):  # botocore validates the parameters itself
        client.receive_message(QueueUrl=url, MaxNumberOfMessages=11)


def test_attach_sqs_answers_a_client_the_code_made(fake_queue):
    import botocore.session

    client = botocore.session.Session().create_client("sqs", region_name="eu-west-1", aws_access_key_id="k", aws_secret_access_key="s")
    broker = FakeBroker(clock=None)
    broker.attach_sqs(client)
    url = client.create_queue(QueueName="events")["QueueUrl"]
    assert url == "https://sqs.eu-west-1.amazonaws.com/000000000000/events"
    client.send_message(QueueUrl=url, MessageBody="hello")
    assert broker.get("events").bodies() == ["hello"]
    broker.close()
    with pytest.raises(TypeError, match="needs an SQS client"):
        FakeBroker().attach_sqs(botocore.session.Session().create_client("s3", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"))


def test_a_kombu_consumer_draining_events_gets_the_redelivery_in_virtual_time(fake_queue, fake_clock):
    from kombu import Consumer, Exchange, Producer, Queue

    jobs = Queue("jobs", Exchange("jobs", type="direct"), routing_key="jobs")
    seen = []

    def on_message(body, message):
        seen.append((fake_clock.now(), body, message.delivery_info["receive_count"]))
        if len(seen) == 2:
            message.ack()  # the first delivery is never acked (the worker died)

    with fake_queue.kombu_connection(visibility_timeout=30) as connection:
        with connection.channel() as channel:
            Producer(channel).publish({"n": 1}, exchange=jobs.exchange, routing_key="jobs", declare=[jobs])
        started = real_monotonic()
        with Consumer(connection, [jobs], callbacks=[on_message]):
            connection.drain_events(timeout=40)
            connection.drain_events(timeout=40)  # kombu polls with time.sleep: virtual
            with pytest.raises(TimeoutError):
                connection.drain_events(timeout=40)
        assert real_monotonic() - started < 5.0
    assert seen == [(0.0, {"n": 1}, 1), (30.0, {"n": 1}, 2)]
    assert fake_queue.get("jobs").idle()


@settings(max_examples=20, deadline=None)
@given(handler_seconds=st.integers(min_value=1, max_value=120), beat=st.booleans())
def test_under_hypothesis_each_example_gets_fresh_queues(fake_queue, handler_seconds, beat):
    # A property: with a heartbeat every 10 s, no handler time leads to a second delivery.
    orders = fake_queue("orders", visibility_timeout=30)
    assert orders.idle() and not orders.deliveries  # nothing left from the previous example
    orders.send("x")
    delivery = orders.receive_one()
    for _ in range(handler_seconds // 10):
        time.sleep(10)
        if beat:
            delivery.heartbeat()
    time.sleep(handler_seconds % 10)
    assert orders.receive_one() is None or not beat
    delivery.ack()
    if beat:
        orders.assert_delivered_once()


def test_the_same_name_gives_the_same_queue_unless_the_settings_differ(fake_queue):
    # As SQS's CreateQueue: the same attributes return the queue, other attributes are refused.
    orders = fake_queue("orders", visibility_timeout=30, max_receive_count=3)
    assert fake_queue("orders") is orders and fake_queue("orders", visibility_timeout=30) is orders
    assert fake_queue("orders", dead_letter_queue="orders-dlq") is orders
    with pytest.raises(QueueError, match=r"exists already with other settings \(visibility_timeout=30.0\)"):
        fake_queue("orders", visibility_timeout=60)


def test_a_boto3_consumer_extends_the_visibility_or_is_reported(fake_queue, fake_clock):
    # Code as written against AWS: boto3's resource API, a 45 s job on a 30 s visibility timeout,
    # extending the visibility between steps; without the heartbeat its late delete is reported.
    boto3 = pytest.importorskip("boto3")
    sqs = boto3.resource("sqs", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    fake_queue.attach_sqs(sqs.meta.client)
    queue = sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "30"})

    def consume(heartbeat):
        done = []
        end = fake_clock.now() + 120
        while fake_clock.now() < end:
            for message in queue.receive_messages(WaitTimeSeconds=20, MaxNumberOfMessages=1):
                for _ in range(3):  # three 15 s steps
                    time.sleep(15)
                    if heartbeat:
                        message.change_visibility(VisibilityTimeout=30)
                done.append(message.body)
                message.delete()
        return done

    queue.send_message(MessageBody="job-1")
    assert consume(heartbeat=True) == ["job-1"]
    fake_queue.get("jobs").assert_delivered_once()
    queue.send_message(MessageBody="job-2")
    assert consume(heartbeat=False) == ["job-2"]  # deleted, but 15 s after anyone could have taken it
    with pytest.raises(RedeliveryCheckFailed, match="acked after 45.000 s, 15.000 s after its visibility ran out"):
        fake_queue.get("jobs").assert_delivered_once()


def test_the_report_line_counts_deliveries_redeliveries_and_dead_letters(fake_queue):
    orders = fake_queue("orders", visibility_timeout=30, max_receive_count=1)
    orders.send("a")
    orders.send("b")
    orders.receive_one().ack()
    orders.receive_one()  # never acked
    time.sleep(30)
    assert orders.receive_one() is None  # "b" moves to the DLQ
    assert orders.report_line() == "queue orders: 2 message(s) sent, 2 deliveries, 1 dead-lettered, 0 left"


def test_retry_check_report_has_a_line_per_fake_queue(pytester):
    pytester.makepyfile(
        """
        import time

        def test_q(fake_queue):
            q = fake_queue("orders", visibility_timeout=30)
            q.send(1)
            d = q.receive_one()
            time.sleep(45)
            d.ack()
        """
    )
    result = pytester.runpytest_inprocess("--retry-check-report", "-p", "no:xdist", "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")
    result.stdout.fnmatch_lines(["*test_q  queue orders: 1 message(s) sent, 1 deliveries, 1 acked after the visibility ran out, 0 left*"])


def test_a_worker_that_raises_fails_the_run(fake_queue):
    def broken():
        time.sleep(1)
        raise KeyError("order")

    with pytest.raises(KeyError, match="order"):
        fake_queue.run_concurrently(broken, lambda: time.sleep(5))


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 5)),
        st.tuples(st.just("receive"), st.integers(1, 3)),
        st.tuples(st.just("sleep"), st.integers(0, 40)),
        st.tuples(st.sampled_from(["ack", "nack", "heartbeat"]), st.integers(0, 9)),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(operations=OPERATIONS)
def test_queue_invariants_under_any_sequence_of_operations(operations):
    """Whatever consumers do: a message is never handed out while an earlier delivery of it is
    still invisible; receive counts go up by one; nothing is received more than maxReceiveCount
    times; every message sent is on the queue, deleted or dead-lettered."""
    with FakeClock() as clock:
        queue = FakeQueue("q", visibility_timeout=30, max_receive_count=3, clock=clock)
        held = []
        open_until = {}  # message id -> when its current delivery's invisibility ends
        counts = {}
        for op, arg in operations:
            if op == "send":
                queue.send(arg, delay=arg)
            elif op == "receive":
                for delivery in queue.receive(arg):
                    mid = delivery.message_id
                    assert clock.now() >= open_until.get(mid, 0.0), f"{mid} delivered while invisible"
                    assert delivery.receive_count == counts.get(mid, 0) + 1 <= 3
                    counts[mid] = delivery.receive_count
                    open_until[mid] = delivery.visible_until
                    held.append(delivery)
            elif op == "sleep":
                clock.advance(arg)
            elif held:
                delivery = held[arg % len(held)]
                try:
                    if op == "ack":
                        delivery.ack()
                    elif op == "nack":
                        delivery.nack()
                        open_until[delivery.message_id] = clock.now()
                    else:
                        delivery.heartbeat()
                        open_until[delivery.message_id] = max(open_until[delivery.message_id], delivery.visible_until)
                except MessageNotInflight:
                    pass
        gone = queue.deleted + len(queue.dead_letters)
        assert len(queue) + gone == queue.sent
        assert all(letter.receive_count == 3 for letter in queue.dead_letters)

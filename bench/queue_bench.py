"""Benchmark of issue 13's two plugin checks: the redelivery fake (FakeQueue) and the incident
scenario (replay_incident), each with a baseline measured in the same run.

    python bench/queue_bench.py [--repeat 5] [--json out.json]

1. Redelivery fake, 10,000 messages on the fake clock: send them all, then receive one at a time
   and ack each; one in ten is first left unacked and comes back when its 30 s visibility runs
   out (11,000 deliveries). Variants: the FakeQueue API; the same through kombu (SimpleQueue on
   the fake queue's transport, 10,000 messages, no redelivery). Baseline: the same work on a plain
   ``collections.deque`` (append, popleft, a dict as the in-flight set), no clock.
2. The incident, 2,000 messages: the incident policy (every 100 ms, 100 tries; 200,000 attempts)
   through ``replay_incident``; baseline: the same policy and capacity model through
   ``simulate`` (the contention engine alone, without the incident's report). And real code: a
   jittered consumer loop (5 attempts, full jitter from 1 s), 2,000 sync clients through
   ``replay_incident`` (one thread each, scheduled in virtual time), and the same loop as
   ``async def`` (tasks on the virtual event loop); baseline: the same clients through
   ``simulate`` directly. And the example service's real consumer
   (``examples/orders_service/orders_good``: kombu, 5 attempts, full jitter, dead-letters what
   gives up), 2,000 orders through ``replay_incident`` as its test runs it (issue 13's target:
   under 2 s); baseline: the jittered loop above through ``simulate`` directly.

Medians of ``--repeat`` runs (real seconds). The machine is shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_retry_check.clock import FakeClock  # noqa: E402
from pytest_retry_check.incident import INCIDENT_POLICY, Incident, replay_incident  # noqa: E402
from pytest_retry_check.redelivery import FakeBroker  # noqa: E402
from pytest_retry_check.simulation import CapacityModel, simulate  # noqa: E402

MESSAGES = 10_000


def timed(func: Callable[[], Any], repeat: int) -> List[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        out.append(time.perf_counter() - started)
    return out


# -- 1. the redelivery fake -----------------------------------------------------------------------
def fake_queue_run() -> None:
    with FakeClock() as clock:
        queue = FakeBroker()("bench", visibility_timeout=30)
        for i in range(MESSAGES):
            queue.send(i)
        deliveries = 0
        while True:
            delivery = queue.receive_one()
            if delivery is None:
                if queue.idle():
                    break
                clock.advance(30)  # the unacked ones come back
                continue
            deliveries += 1
            if delivery.body % 10 == 0 and delivery.receive_count == 1:
                continue  # left unacked: redelivered after its visibility timeout
            delivery.ack()
        assert deliveries == MESSAGES + MESSAGES // 10, deliveries


def kombu_run() -> None:
    with FakeClock():
        broker = FakeBroker()
        with broker.kombu_connection() as connection:
            queue = connection.SimpleQueue("bench")
            for i in range(MESSAGES):
                queue.put(i)
            got = 0
            while True:
                try:
                    message = queue.get_nowait()
                except queue.Empty:
                    break
                message.ack()
                got += 1
            assert got == MESSAGES, got


def deque_baseline() -> None:
    pending: collections.deque = collections.deque()
    in_flight: Dict[int, int] = {}
    for i in range(MESSAGES):
        pending.append(i)
    returned: List[int] = []
    deliveries = 0
    first = set()
    while pending or returned:
        if not pending:
            pending.extend(returned)
            returned.clear()
            continue
        body = pending.popleft()
        deliveries += 1
        in_flight[body] = deliveries
        if body % 10 == 0 and body not in first:
            first.add(body)
            returned.append(body)
            continue
        del in_flight[body]
    assert deliveries == MESSAGES + MESSAGES // 10


# -- 2. the incident --------------------------------------------------------------------------------
def jittered_consumer(database: Any) -> Any:
    for attempt in range(1, 6):
        try:
            return database()
        except ConnectionError:
            if attempt == 5:
                raise
            time.sleep(random.uniform(0, min(20.0, 2.0 ** (attempt - 1))))


async def jittered_async_consumer(database: Any) -> Any:
    import asyncio

    for attempt in range(1, 6):
        try:
            return await database.acall()
        except ConnectionError:
            if attempt == 5:
                raise
            await asyncio.sleep(random.uniform(0, min(20.0, 2.0 ** (attempt - 1))))


def incident_policy() -> None:
    report = replay_incident(INCIDENT_POLICY)
    assert report.peak >= 19_000


def engine_policy() -> None:
    incident = Incident()
    plain = CapacityModel(incident.capacity, 1.0, ((0.0, incident.outage),), incident.network)
    simulate(INCIDENT_POLICY, clients=incident.messages, model=plain, seed=0)


def incident_code() -> None:
    report = replay_incident(jittered_consumer)
    assert report.peak < 5_000


def engine_code() -> None:
    incident = Incident()
    plain = CapacityModel(incident.capacity, 1.0, ((0.0, incident.outage),), incident.network)
    simulate(jittered_consumer, clients=incident.messages, model=plain, seed=0)


def incident_async() -> None:
    report = replay_incident(jittered_async_consumer)
    assert report.peak < 5_000


def engine_async() -> None:
    incident = Incident()
    plain = CapacityModel(incident.capacity, 1.0, ((0.0, incident.outage),), incident.network)
    simulate(jittered_async_consumer, clients=incident.messages, model=plain, seed=0)


def example_consumer() -> None:
    """The example service's good consumer in the incident, wired as its test wires it."""
    import logging

    sys.path.insert(0, str(ROOT / "examples" / "orders_service"))
    from kombu import Connection

    import orders_good.consumer as good
    from orders_api import TransientError
    from pytest_retry_check.downstream import DownstreamUnavailable

    class SimulatedApi:
        def __init__(self, downstream: Any) -> None:
            self.downstream = downstream

        def submit(self, order: Any) -> Any:
            try:
                return self.downstream()
            except DownstreamUnavailable as exc:
                raise TransientError(str(exc), exc.status) from None

    class Taken:
        def __init__(self, order: Any) -> None:
            self.payload, self.headers = order, {}

        def ack(self) -> None:
            pass

    log = logging.getLogger(good.__name__)  # its ~400 dead-letter warnings are made, not printed
    log.addHandler(logging.NullHandler())
    log.propagate = False
    with Connection("memory://") as connection:
        made: Dict[int, Any] = {}

        def handle(downstream: Any) -> Any:
            consumer = made.get(id(downstream))
            if consumer is None:
                consumer = made[id(downstream)] = good.OrdersConsumer(connection, SimulatedApi(downstream))
            return consumer.handle(Taken({"id": 1}))

        report = replay_incident(handle, messages=2_000, max_peak=5_000, recovers=True)
        for name in ("orders", "orders.dlq"):
            connection.SimpleQueue(name).clear()
    assert report.peak < 5_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--code-repeat", type=int, default=3, help="runs of the real-code incident (threads; slower)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    cases = [
        ("redelivery: FakeQueue, 10,000 messages (11,000 deliveries)", fake_queue_run, "baseline: collections.deque loop", deque_baseline, args.repeat),
        ("redelivery: kombu SimpleQueue on the fake queue, 10,000 messages", kombu_run, "baseline: collections.deque loop", deque_baseline, args.repeat),
        ("incident: policy, 2,000 messages (200,000 attempts)", incident_policy, "baseline: simulate() alone", engine_policy, args.repeat),
        ("incident: real async code, 2,000 messages (~10,000 attempts)", incident_async, "baseline: simulate() alone", engine_async, args.repeat),
        ("incident: real sync code, 2,000 messages (~10,000 attempts)", incident_code, "baseline: simulate() alone", engine_code, args.code_repeat),
        ("incident: the example service's consumer, 2,000 orders", example_consumer, "baseline: simulate() alone", engine_code, args.code_repeat),
    ]
    results: Dict[str, Any] = {"load_average": load}
    print(f"load average at start: {load:.2f} ({os.cpu_count()} cores)")
    for label, func, base_label, base, repeat in cases:
        measured, baseline = [], []
        for _ in range(repeat):  # interleaved: both see the same load
            measured += timed(func, 1)
            baseline += timed(base, 1)
        m, b = statistics.median(measured), statistics.median(baseline)
        results[label] = {"median": m, "runs": measured, "baseline": base_label, "baseline_median": b, "baseline_runs": baseline}
        print(f"{label}: median {m:.3f} s (runs {', '.join(f'{x:.3f}' for x in measured)}); {base_label}: {b:.4f} s; ratio {m / b:,.1f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

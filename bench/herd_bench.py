"""Benchmark of the herd check and the contention simulation (pytest_retry_check).

    python bench/herd_bench.py [--repeat 5] [--json out.json]

Every measurement is the median of ``--repeat`` runs, next to a baseline measured in the same
run, on the same machine, with the same inputs:

1. Policy-level contention simulation: 10,000 clients, full jitter, at most 10 attempts each, on
   the optimistic-concurrency model (target: under 1 s). Baseline: the same simulation written
   the way the AWS simulator is (one heap event per network message, ``normalvariate`` per leg).
2. The AWS comparison itself: 5 strategies x 50 and 100 clients x 100 runs (no target; for the
   record). Baseline: the same AWS-style simulator.
3. Herd check of 500 clients running real sync retry code (tenacity, full jitter, down 0-30 s;
   target: under 5 s). Baseline: the same 500 clients with ``time.sleep`` patched to a no-op,
   what suites do today -- the cost of the retry code itself; the ratio is our overhead.
4. Herd check of 500 async clients on the virtual event loop (a hand-written loop with
   ``asyncio.sleep``; target: under 5 s). Baseline: the same clients on a plain event loop
   with ``asyncio.sleep`` patched to yield without waiting.

5. Herd check of 2,000 sync httpx clients through ``downstream.httpx_transport()`` (tenacity,
   full jitter, a new ``httpx.Client`` per client; target: under 3 s). Baselines: the same
   2,000 clients calling the fake directly (``ds()``: the herd check without httpx), and the
   same httpx clients on a plain ``httpx.MockTransport`` answering 503 for the first calls then
   200 with ``time.sleep`` patched to a no-op (httpx's own cost, without the plugin).

``--only httpx`` runs measurement 5 alone.

Also printed: the virtual time each check simulated (what real sleeping would cost).
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tenacity  # noqa: E402

from pytest_retry_check import Backoff, FakeDownstream, measure_dispersion, simulate  # noqa: E402
from pytest_retry_check.simulation import aws_comparison  # noqa: E402

CLIENTS = 500


def timed(func: Callable[[], Any], repeat: int) -> List[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return times


# -- baselines ------------------------------------------------------------------------------
def aws_style_simulation(clients: int, kind: str, max_attempts: int, rng: random.Random, base: float = 0.005, cap: float = 2.0) -> int:
    """The AWS simulator's design: every network message is a heap event (read, read reply,
    write, write reply), every leg a ``normalvariate``. Returns the server calls."""
    net = lambda: abs(rng.normalvariate(0.010, 0.002))  # noqa: E731
    version, calls = 0, 0
    attempts = [1] * clients
    queue = [(net(), 0, c, 0) for c in range(clients)]
    heapq.heapify(queue)
    while queue:
        at, step, client, payload = heapq.heappop(queue)
        if step == 0:  # the read arrives
            heapq.heappush(queue, (at + net(), 1, client, version))
        elif step == 1:  # the read's answer arrives: write
            heapq.heappush(queue, (at + net(), 2, client, payload))
        elif step == 2:  # the write arrives
            calls += 1
            ok = payload == version
            if ok:
                version += 1
            heapq.heappush(queue, (at + net(), 3, client, ok))
        elif not payload and attempts[client] < max_attempts:  # the write's answer: retry?
            n = attempts[client]
            attempts[client] += 1
            expo = min(cap, base * 2**n)
            delay = rng.uniform(0, expo) if kind == "full" else expo
            heapq.heappush(queue, (at + net() + delay, 0, client, 0))
    return calls


def tenacity_client(downstream: Any) -> Any:
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(8),
        wait=tenacity.wait_random_exponential(multiplier=1, max=20),
        retry=tenacity.retry_if_exception_type(ConnectionError),
        reraise=True,
    )
    try:
        return retrying(downstream)
    except ConnectionError:
        return None


async def async_client(downstream: Any) -> Any:
    for attempt in range(1, 9):
        try:
            return await downstream.acall()
        except ConnectionError:
            if attempt == 8:
                return None
            await asyncio.sleep(random.uniform(0, min(20, 2 ** (attempt - 1))))


HTTPX_CLIENTS = 2000


def _httpx_policy(retry_on: Any) -> tenacity.Retrying:
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(8),
        wait=tenacity.wait_random_exponential(multiplier=1, max=20),
        retry=tenacity.retry_if_exception_type(retry_on),
        reraise=True,
    )


def httpx_client(downstream: Any) -> Any:
    import httpx

    return _get_order(httpx.Client(transport=downstream.httpx_transport(), base_url="https://orders.example"))


def _get_order(client: Any) -> Any:
    """One client's GET under the tenacity policy; the client is closed afterwards."""
    import httpx

    try:
        return _httpx_policy(httpx.HTTPError)(lambda: client.get("/orders/42").raise_for_status().json())
    except httpx.HTTPError:
        return None
    finally:
        client.close()


def direct_client(downstream: Any) -> Any:
    try:
        return _httpx_policy(ConnectionError)(downstream)
    except ConnectionError:
        return None


def plain_httpx(clients: int) -> None:
    import httpx

    def client_once() -> Any:
        calls = [0]

        def handler(request: Any) -> Any:
            calls[0] += 1
            if calls[0] <= 6:
                return httpx.Response(503, json={"error": "unavailable", "call": calls[0]})
            return httpx.Response(200, json={"ok": True, "call": calls[0]})

        return _get_order(httpx.Client(transport=httpx.MockTransport(handler), base_url="https://orders.example"))

    with mock.patch("time.sleep", lambda seconds: None):
        for _ in range(clients):
            client_once()


def measure_httpx(results: Dict[str, Dict[str, Any]], repeat: int) -> None:
    measure_dispersion(httpx_client, clients=20)  # warm up
    reports: List[Any] = []
    runs = timed(lambda: reports.append(measure_dispersion(httpx_client, clients=HTTPX_CLIENTS)), repeat)
    calls = sum(len(s) for s in reports[-1].schedules)
    direct = timed(lambda: measure_dispersion(direct_client, clients=HTTPX_CLIENTS), repeat)
    plain = timed(lambda: plain_httpx(HTTPX_CLIENTS), repeat)
    note = f"{calls:,} calls; httpx alone (MockTransport, no-op sleep): {statistics.median(plain):.2f} s"
    results[f"herd check, {HTTPX_CLIENTS:,} sync httpx clients (httpx_transport)"] = dict(
        median=statistics.median(runs), baseline=statistics.median(direct), baseline_name="same, calling the fake directly", target=3.0, note=note
    )


class _StepClock:
    """A stand-in clock for the no-op baselines: the downstream sees time move by a fixed step per
    call, so the outage ends and clients stop as they would (no freezegun, no patching)."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        self.t += 4.0
        return self.t

    sleeps: List[Any] = []


def noop_sleep_sync(clients: int) -> None:
    with mock.patch("time.sleep", lambda seconds: None):
        for _ in range(clients):
            tenacity_client(FakeDownstream(outages=[(0, 30)], clock=_StepClock()))


def noop_sleep_async(clients: int) -> None:
    real_sleep = asyncio.sleep

    async def no_wait(delay: float, result: Any = None) -> Any:
        return await real_sleep(0, result)

    async def main() -> None:
        await asyncio.gather(*(async_client(FakeDownstream(outages=[(0, 30)], clock=_StepClock())) for _ in range(clients)))

    with mock.patch("asyncio.sleep", no_wait):
        asyncio.run(main())


# -- the measurements -----------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", choices=["httpx"], default=None)
    args = parser.parse_args()
    repeat = args.repeat
    results: Dict[str, Dict[str, Any]] = {}
    if args.only == "httpx":
        measure_httpx(results, repeat)
        return report(results, repeat, args.json)

    policy = Backoff("full", max_attempts=10)
    simulate(policy, clients=1000, seed=0)  # warm up imports
    sim = timed(lambda: simulate(policy, clients=10_000, seed=1), repeat)
    base = timed(lambda: aws_style_simulation(10_000, "full", 10, random.Random(1)), repeat)
    calls = simulate(policy, clients=10_000, seed=1).calls
    results["policy-level 10,000 clients x <=10 attempts"] = dict(
        median=statistics.median(sim), baseline=statistics.median(base), baseline_name="AWS-style simulator", target=1.0, note=f"{calls:,.0f} calls"
    )

    aws = timed(lambda: aws_comparison(runs=100, seed=1), max(1, repeat // 2))
    aws_base = timed(lambda: [aws_style_simulation(n, k, 10**9, random.Random(1)) for n in (50, 100) for k in ("full", "exponential") for _ in range(100)], 1)
    results["AWS comparison (5 strategies x 2 sizes x 100 runs)"] = dict(
        median=statistics.median(aws),
        baseline=statistics.median(aws_base) * 5 / 2,
        baseline_name="AWS-style (2 of 5 strategies) x 5/2",
        target=None,
        note="",
    )

    measure_dispersion(tenacity_client, clients=20)  # warm up
    reports: List[Any] = []
    sync = timed(lambda: reports.append(measure_dispersion(tenacity_client, clients=CLIENTS)), repeat)
    virtual = sum(s[-1] for s in reports[-1].schedules)
    sync_base = timed(lambda: noop_sleep_sync(CLIENTS), repeat)
    results[f"herd check, {CLIENTS} sync clients (tenacity)"] = dict(
        median=statistics.median(sync), baseline=statistics.median(sync_base), baseline_name="no-op time.sleep", target=5.0, note=f"{virtual:,.0f} s virtual"
    )

    async_runs = timed(lambda: reports.append(measure_dispersion(async_client, clients=CLIENTS)), repeat)
    virtual = sum(s[-1] for s in reports[-1].schedules)
    async_base = timed(lambda: noop_sleep_async(CLIENTS), repeat)
    results[f"herd check, {CLIENTS} async clients (virtual loop)"] = dict(
        median=statistics.median(async_runs), baseline=statistics.median(async_base), baseline_name="no-op asyncio.sleep", target=5.0, note=f"{virtual:,.0f} s virtual"
    )

    measure_httpx(results, repeat)
    return report(results, repeat, args.json)


def report(results: Dict[str, Dict[str, Any]], repeat: int, json_path: Any) -> int:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f}; medians of {repeat} runs\n")
    width = max(len(name) for name in results)
    print(f"{'measurement':<{width}}  {'median':>8}  {'baseline (same run)':>34}  {'ratio':>6}  {'target':>7}  note")
    failed = False
    for name, r in results.items():
        ratio = r["median"] / r["baseline"]
        target = "-" if r["target"] is None else f"< {r['target']:g} s"
        ok = r["target"] is None or r["median"] < r["target"]
        failed |= not ok
        baseline = f"{r['baseline_name']} {r['baseline']:.2f} s"
        print(f"{name:<{width}}  {r['median']:>6.2f} s  {baseline:>34}  {ratio:>5.2f}x  {target:>7}  {r['note']}{'' if ok else '  MISSED'}")
    if json_path:
        json_path.write_text(json.dumps({"load_average": load, "repeat": repeat, "results": results}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

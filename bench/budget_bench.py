"""Benchmark of the retry budget check and the token-bucket simulation (pytest_retry_check).

    python bench/budget_bench.py [--repeat 5] [--json out.json]

Every measurement is the median of ``--repeat`` runs, next to a baseline measured in the same
run, on the same machine, with the same inputs:

1. Policy level, 10,000 clients, full jitter (base 0.5 s, cap 20 s, 12 attempts), capacity 200
   calls/s, down 0-30 s, with gRPC's token bucket 10/0.1. Baseline: the same simulation without
   a budget. (The budget cuts the work: the calls made are printed.)
2. The bucket's own cost: the same simulation with a bucket that does all its bookkeeping but
   never refuses (a ``TokenBucket`` whose ``record_failure`` always answers yes: the same calls
   as without a budget), against no budget.
3. ``budget_check`` of 1,000 clients running real sync code (tenacity, full jitter, six
   attempts, ``@bucket.guard`` with that never-refusing bucket, so every retry is still made),
   down 0-30 s. Baseline: ``simulate`` of the same clients without the guard -- the contention
   simulation the check is measured on, doing the same calls.
4. The same for 1,000 async clients (tenacity ``AsyncRetrying``, ``await downstream.acall()``).

Also printed: the calls each run made and the virtual time it simulated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tenacity  # noqa: E402

from pytest_retry_check import Backoff, CapacityModel, simulate  # noqa: E402
from pytest_retry_check.budgets import TokenBucket, budget_check  # noqa: E402

POLICY = dict(
    stop=tenacity.stop_after_attempt(6),
    wait=tenacity.wait_random_exponential(multiplier=0.5, max=20),
    retry=tenacity.retry_if_exception_type(ConnectionError),
    reraise=True,
)
class NeverRefuses(TokenBucket):
    """Counts every outcome like a TokenBucket, and allows every retry: the same work as no budget."""

    def record_failure(self) -> bool:
        super().record_failure()
        return True

    def fresh(self) -> "NeverRefuses":
        return NeverRefuses(self.max_tokens, self.token_ratio)


ROOMY = NeverRefuses(10, 0.1)


@tenacity.retry(**POLICY)
def fetch(downstream: Any) -> Any:
    return downstream()


@tenacity.retry(**POLICY)
@ROOMY.guard
def fetch_guarded(downstream: Any) -> Any:
    return downstream()


async def afetch(downstream: Any) -> Any:
    async for attempt in tenacity.AsyncRetrying(**POLICY):
        with attempt:
            return await downstream.acall()


@ROOMY.guard
async def _attempt(downstream: Any) -> Any:
    return await downstream.acall()


async def afetch_guarded(downstream: Any) -> Any:
    async for attempt in tenacity.AsyncRetrying(**POLICY):
        with attempt:
            return await _attempt(downstream)


def timed(func: Callable[[], Any], repeat: int) -> List[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return times


def measure(name: str, run: Callable[[], Any], baseline_name: str, baseline: Callable[[], Any], repeat: int) -> Dict[str, Any]:
    # Interleaved, so that load from other jobs on the machine hits both alike.
    ours: List[float] = []
    base: List[float] = []
    for _ in range(repeat):
        ours += timed(run, 1)
        base += timed(baseline, 1)
    row = {"name": name, "median_s": statistics.median(ours), "baseline": baseline_name, "baseline_median_s": statistics.median(base)}
    print(f"{name}: median {row['median_s']:.3f} s   |   {baseline_name}: median {row['baseline_median_s']:.3f} s   (ratio {row['median_s'] / row['baseline_median_s']:.2f})")
    return row


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []

    model = CapacityModel(200, outages=((0, 30),))
    policy = Backoff("full", base=0.5, cap=20, max_attempts=12)
    plain = simulate(policy, clients=10_000, model=model, seed=1)
    budgeted = simulate(policy, clients=10_000, model=model, seed=1, budget=TokenBucket(10, 0.1))
    roomy = simulate(policy, clients=10_000, model=model, seed=1, budget=NeverRefuses(10, 0.1))
    print(f"1. 10,000 clients: no budget {plain.calls:,.0f} calls in {plain.completion:,.1f} virtual s; "
          f"token bucket 10/0.1 {budgeted.calls:,.0f} calls ({budgeted.retries:,.0f} retries) in {budgeted.completion:,.1f} s; "
          f"never-refusing bucket {roomy.calls:,.0f} calls")
    rows.append(measure(
        "policy level, 10,000 clients, token bucket 10/0.1", lambda: simulate(policy, clients=10_000, model=model, seed=1, budget=TokenBucket(10, 0.1)),
        "no budget", lambda: simulate(policy, clients=10_000, model=model, seed=1), args.repeat,
    ))
    rows.append(measure(
        "policy level, 10,000 clients, a never-refusing bucket (same calls)", lambda: simulate(policy, clients=10_000, model=model, seed=1, budget=NeverRefuses(10, 0.1)),
        "no budget", lambda: simulate(policy, clients=10_000, model=model, seed=1), args.repeat,
    ))

    code_model = CapacityModel(10**9, outages=((0, 30),))
    report = budget_check.measure(fetch_guarded, clients=1000, budget=ROOMY)
    print(f"3. {report.summary()}")
    rows.append(measure(
        "budget_check, 1,000 sync tenacity clients with bucket.guard", lambda: budget_check.measure(fetch_guarded, clients=1000, budget=ROOMY),
        "simulate, the same clients without the guard", lambda: simulate(fetch, clients=1000, model=code_model), args.repeat,
    ))
    report = budget_check.measure(afetch_guarded, clients=1000, budget=ROOMY)
    print(f"4. {report.summary()}")
    rows.append(measure(
        "budget_check, 1,000 async tenacity clients with bucket.guard", lambda: budget_check.measure(afetch_guarded, clients=1000, budget=ROOMY),
        "simulate, the same clients without the guard", lambda: simulate(afetch, clients=1000, model=code_model), args.repeat,
    ))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

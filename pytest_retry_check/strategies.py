"""Hypothesis strategies for failure scenarios of a downstream.

``from pytest_retry_check import strategies as rs`` then ``@given(rs.scenarios())``: each example
is a :class:`~pytest_retry_check.downstream.Scenario` for ``fake_downstream(scenario)``.
Importing this module imports hypothesis (a test dependency, not a runtime one).
"""

from __future__ import annotations

from typing import Optional, Tuple

from hypothesis import strategies as st

from . import downstream as ds
from .downstream import Outcome, Scenario

__all__ = [
    "capacities",
    "outage_windows",
    "outcome_sequences",
    "outcomes",
    "retry_after_values",
    "scenarios",
]

TRANSIENT_STATUSES = (500, 502, 503, 504, 408)
PERMANENT_STATUSES = (400, 401, 403, 404, 409, 410, 422)
AMBIGUOUS_STATUSES = (500, 502, 503, 504)


def retry_after_values(*, max_seconds: int = 120) -> st.SearchStrategy[int]:
    """``Retry-After`` delays in whole seconds (what HTTP can say)."""
    _whole("max_seconds", max_seconds, 0)
    return st.integers(min_value=0, max_value=max_seconds)


def outcomes(
    *,
    transient: bool = True,
    rate_limited: bool = True,
    permanent: bool = False,
    drops: bool = False,
    max_retry_after: int = 120,
    ambiguous: bool = False,
) -> st.SearchStrategy[Outcome]:
    """One failing outcome of the enabled kinds (429s with and without ``Retry-After``, as
    seconds or as an HTTP-date). ``ambiguous``: failures after the request was applied
    (``error_after_commit`` with a 5xx, ``reset_after_commit``), for ``assert_idempotent``."""
    choices = []
    if transient:
        choices.append(st.sampled_from(TRANSIENT_STATUSES).map(ds.transient))
    if rate_limited:
        with_header = st.builds(lambda s, d: ds.rate_limited(s, as_date=d), retry_after_values(max_seconds=max_retry_after), st.booleans())
        choices.append(st.one_of(st.just(ds.rate_limited()), with_header))
    if permanent:
        choices.append(st.sampled_from(PERMANENT_STATUSES).map(ds.permanent))
    if drops:
        choices.append(st.just(ds.drop()))
    if ambiguous:
        choices.append(st.one_of(st.sampled_from(AMBIGUOUS_STATUSES).map(ds.error_after_commit), st.just(ds.reset_after_commit())))
    if not choices:
        raise ValueError("outcomes() needs at least one of transient, rate_limited, permanent, drops, ambiguous enabled")
    return st.one_of(*choices)


def outcome_sequences(*, min_size: int = 0, max_size: int = 8, **kinds: bool) -> st.SearchStrategy[Tuple[Outcome, ...]]:
    """A run of failures (mixing the kinds enabled in ``kinds``, see :func:`outcomes`)."""
    _whole("min_size", min_size, 0)
    _whole("max_size", max_size, min_size)
    return st.lists(outcomes(**kinds), min_size=min_size, max_size=max_size).map(tuple)


def outage_windows(*, max_windows: int = 2, horizon: float = 300.0, max_length: float = 120.0) -> st.SearchStrategy[Tuple[Tuple[float, float], ...]]:
    """Disjoint ``(start, end)`` windows of virtual seconds within ``[0, horizon]``."""
    _whole("max_windows", max_windows, 0)
    if not horizon > 0 or not max_length > 0:
        raise ValueError("outage_windows() needs horizon > 0 and max_length > 0")
    window = st.tuples(st.floats(0, horizon, allow_nan=False), st.floats(0.001, max_length, allow_nan=False))
    return st.lists(window, max_size=max_windows).map(_disjoint)


def _disjoint(raw: list) -> Tuple[Tuple[float, float], ...]:
    merged: list = []
    for start, length in sorted(raw):
        end = start + length
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return tuple(merged)


def capacities(*, min_value: int = 1, max_value: int = 20) -> st.SearchStrategy[int]:
    """Calls per virtual second the downstream can take."""
    _whole("min_value", min_value, 1)
    _whole("max_value", max_value, min_value)
    return st.integers(min_value=min_value, max_value=max_value)


def scenarios(
    *,
    transient: bool = True,
    rate_limited: bool = True,
    permanent: bool = False,
    outages: bool = True,
    capacity: bool = False,
    recovers: Optional[bool] = True,
    max_failures: int = 8,
    max_retry_after: int = 120,
    horizon: float = 300.0,
) -> st.SearchStrategy[Scenario]:
    """Whole scenarios: a run of failures, maybe outage windows and a capacity limit, then
    recovery (``recovers=True``), no recovery (``False``) or either (``None``)."""
    failures = outcome_sequences(
        max_size=max_failures, transient=transient, rate_limited=rate_limited, permanent=permanent, max_retry_after=max_retry_after
    )
    windows = outage_windows(horizon=horizon) if outages else st.just(())
    limit = st.one_of(st.none(), capacities()) if capacity else st.just(None)
    ends = {True: st.just(ds.ok()), False: st.sampled_from(TRANSIENT_STATUSES).map(ds.transient)}
    then = ends[recovers] if recovers is not None else st.one_of(*ends.values())
    return st.builds(Scenario, outcomes=failures, then=then, outages=windows, capacity=limit)


def _whole(name: str, value: object, minimum: float) -> None:
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum:g}, got {value!r}")

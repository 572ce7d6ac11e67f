"""pytest_retry_check: a fake clock, a failing downstream and property checks for retry code.

Names are imported lazily: pytest loads this package's plugin in every run, and a test suite
that does not use it should pay nothing for it. Functions that check user input set
``__tracebackhide__`` so that pytest points at the user's line, not at our internals.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "FakeClock": "clock",
    "current_clock": "clock",
    "Timeline": "timeline",
    "SleepRecord": "timeline",
    "RetryGuardTripped": "timeline",
    "RealSleepDetected": "timeline",
    "RealClockCaptured": "timeline",
    "RealTimeWarning": "_warnings",
    "CapturedClockWarning": "_warnings",
    "UntestedTimeoutWarning": "_warnings",
    "FakeDownstream": "downstream",
    "Scenario": "downstream",
    "Outcome": "downstream",
    "CallRecord": "downstream",
    "ok": "downstream",
    "transient": "downstream",
    "rate_limited": "downstream",
    "permanent": "downstream",
    "drop": "downstream",
    "slow": "downstream",
    "hang": "downstream",
    "DownstreamTimeout": "downstream",
    "raises": "downstream",
    "after_commit": "downstream",
    "timeout_after_commit": "downstream",
    "reset_after_commit": "downstream",
    "error_after_commit": "downstream",
    "assert_idempotent": "effects",
    "TokenBucket": "budgets",
    "RetryBudgetExhausted": "budgets",
    "budget_check": "budgets",
    "BudgetReport": "budgets",
    "DownstreamError": "downstream",
    "DownstreamUnavailable": "downstream",
    "DownstreamRateLimited": "downstream",
    "DownstreamPermanentError": "downstream",
    "DownstreamConnectionDropped": "downstream",
    "Trace": "trace",
    "Attempt": "trace",
    "capture_trace": "trace",
    "RetryCheckFailed": "assertions",
    "assert_bounded": "assertions",
    "assert_backs_off": "assertions",
    "assert_jittered": "assertions",
    "assert_honours_retry_after": "assertions",
    "assert_no_retry_on_permanent": "assertions",
    "assert_gives_up": "assertions",
    "assert_succeeded": "assertions",
    "DeadLetters": "dead_letters",
    "DeadLetter": "dead_letters",
    "herd_check": "dispersion",
    "measure_dispersion": "dispersion",
    "assert_dispersed": "dispersion",
    "dispersion_of": "dispersion",
    "DispersionReport": "dispersion",
    "DispersionLimits": "dispersion",
    "simulate": "simulation",
    "SimulationResult": "simulation",
    "ConflictModel": "simulation",
    "CapacityModel": "simulation",
    "Network": "simulation",
    "Backoff": "backoffs",
    "Strategy": "backoffs",
    "policy_at": "backoffs",
    "FakeQueue": "redelivery",
    "FakeBroker": "redelivery",
    "RedeliveryCheckFailed": "redelivery",
    "replay_incident": "incident",
    "Incident": "incident",
    "IncidentReport": "incident",
    "IncidentCheckFailed": "incident",
}

__all__ = sorted(_EXPORTS) + ["strategies"]


def __getattr__(name: str) -> Any:
    if name == "strategies":
        return importlib.import_module(f"{__name__}.strategies")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs; never executed
    from .assertions import (  # noqa: F401
        RetryCheckFailed,
        assert_backs_off,
        assert_bounded,
        assert_gives_up,
        assert_honours_retry_after,
        assert_jittered,
        assert_no_retry_on_permanent,
        assert_succeeded,
    )
    from .clock import FakeClock, current_clock  # noqa: F401
    from .backoffs import Backoff, Strategy, policy_at  # noqa: F401
    from .dead_letters import DeadLetter, DeadLetters  # noqa: F401
    from .dispersion import DispersionLimits, DispersionReport, assert_dispersed, dispersion_of, herd_check, measure_dispersion  # noqa: F401
    from .effects import assert_idempotent  # noqa: F401
    from .budgets import BudgetReport, RetryBudgetExhausted, TokenBucket, budget_check  # noqa: F401
    from .downstream import (  # noqa: F401
        CallRecord,
        DownstreamConnectionDropped,
        DownstreamError,
        DownstreamPermanentError,
        DownstreamRateLimited,
        DownstreamTimeout,
        DownstreamUnavailable,
        FakeDownstream,
        Outcome,
        Scenario,
        after_commit,
        drop,
        error_after_commit,
        hang,
        ok,
        permanent,
        raises,
        rate_limited,
        reset_after_commit,
        slow,
        timeout_after_commit,
        transient,
    )
    from .incident import Incident, IncidentCheckFailed, IncidentReport, replay_incident  # noqa: F401
    from .redelivery import FakeBroker, FakeQueue, RedeliveryCheckFailed  # noqa: F401
    from .simulation import CapacityModel, ConflictModel, Network, SimulationResult, simulate  # noqa: F401
    from ._warnings import CapturedClockWarning, RealTimeWarning, UntestedTimeoutWarning  # noqa: F401
    from .timeline import RealClockCaptured, RealSleepDetected, RetryGuardTripped, SleepRecord, Timeline  # noqa: F401
    from .trace import Attempt, Trace, capture_trace  # noqa: F401

"""Retry policies the simulations run without any code: built-in backoff strategies, and the
model that ``retrylint`` extracts from a retry site (:class:`retrylint.model.RetryPolicy`).

A strategy says when a client gives up (``max_attempts``, ``deadline``) and, per client,
draws the delay before each retry (``sampler(rng)`` returns ``delay(k)`` for retry k = 1, 2, ...).
The built-in ones are the five of the AWS "Exponential Backoff And Jitter" comparison, with
its conventions: the delay before retry k is drawn around ``min(cap, base * 2**k)``, so the
first retry is centred on 2 x base.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple, Union

__all__ = [
    "AWS_STRATEGIES",
    "Backoff",
    "PolicyStrategy",
    "Strategy",
    "as_strategy",
    "builtin",
    "policy_at",
]

DelayFn = Callable[[int], float]

#: The kinds of :class:`Backoff`, in the column order of the AWS comparison.
KINDS = ("none", "exponential", "equal", "full", "decorrelated", "band")
AWS_STRATEGIES = ("none", "exponential", "equal", "full", "decorrelated")

_LABELS = {
    "none": "no backoff",
    "exponential": "exponential, no jitter",
    "equal": "equal jitter",
    "full": "full jitter",
    "decorrelated": "decorrelated jitter",
}


class Strategy:
    """What the simulations need from a retry policy. Subclass it for a policy of your own."""

    #: A short label for tables and plots.
    name: str = "strategy"
    #: Every call including the first; None: no limit.
    max_attempts: Optional[int] = None
    #: Seconds since the first attempt after which a failure is final; None: no deadline.
    deadline: Optional[float] = None
    #: True when ``sampler`` keeps no state between retries: then one sampler serves every
    #: client (10,000 clients need not build 10,000 closures).
    stateless: bool = False

    def sampler(self, rng: random.Random) -> DelayFn:
        """For one client: ``delay(k)``, the seconds to wait before retry ``k`` (1-based).

        Called with k = 1, 2, ... in order, so a sampler may keep state (decorrelated jitter
        needs the previous delay). Draw randomness from ``rng`` only: simulations are
        reproducible with a seed.
        """
        raise NotImplementedError


def _positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    __tracebackhide__ = True
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value != math.inf
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} number of seconds, got {value!r}")
    return float(value)


def _attempts(value: Any) -> Optional[int]:
    __tracebackhide__ = True
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_attempts must be a whole number >= 1 (every call, the first included) or None, got {value!r}")
    return value


@dataclass(frozen=True)
class Backoff(Strategy):
    """A built-in strategy. ``kind``:

    - ``"none"``: retry at once;
    - ``"exponential"``: ``min(cap, base * factor**k)``, no jitter;
    - ``"equal"``: ``d/2 + uniform(0, d/2)`` of that;
    - ``"full"``: ``uniform(0, d)``;
    - ``"decorrelated"``: ``min(cap, uniform(base, previous * 3))``, previous starting at base;
    - ``"band"``: ``d * uniform(1 - band, 1 + band)`` (``band=0.5`` is the doctrine's ±50 %).
    """

    kind: str
    base: float = 0.005
    cap: float = 2.0
    factor: float = 2.0
    band: float = 0.5
    max_attempts: Optional[int] = None
    deadline: Optional[float] = None
    label: str = ""
    _table: Tuple[float, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        if self.kind not in KINDS:
            raise ValueError(f"unknown backoff kind {self.kind!r}: use one of {', '.join(KINDS)}")
        _positive("base", self.base)
        _positive("cap", self.cap)
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)) or not 1 <= self.factor < math.inf:
            raise ValueError(f"factor must be a number >= 1, got {self.factor!r}")
        if isinstance(self.band, bool) or not isinstance(self.band, (int, float)) or not 0 <= self.band <= 1:
            raise ValueError(f"band must be a fraction in [0, 1] (0.5 is ±50 %), got {self.band!r}")
        _attempts(self.max_attempts)
        if self.deadline is not None:
            _positive("deadline", self.deadline)
        # min(cap, base * factor**k) for every k before the cap is reached: no pow() per retry.
        table: List[float] = [0.0]
        k = 1
        while table[-1] < self.cap and k < 2000:
            table.append(min(self.cap, self.base * self.factor**k))
            k += 1
        object.__setattr__(self, "_table", tuple(table))

    @property
    def name(self) -> str:  # type: ignore[override]
        if self.label:
            return self.label
        if self.kind == "band":
            return f"±{self.band:.0%} band"
        return _LABELS[self.kind]

    @property
    def stateless(self) -> bool:  # type: ignore[override]
        return self.kind != "decorrelated"

    def sampler(self, rng: random.Random) -> DelayFn:
        # The table lookup is written into each lambda: one Python call per retry, not two
        # (this is the inner loop of a 10,000-client simulation).
        table, last, cap, uniform, rand = self._table, len(self._table) - 1, self.cap, rng.uniform, rng.random
        kind = self.kind
        if kind == "none":
            return _zero
        if kind == "exponential":
            return lambda k: table[k] if k <= last else cap
        if kind == "full":
            return lambda k: (table[k] if k <= last else cap) * rand()
        if kind == "equal":
            return lambda k: (table[k] if k <= last else cap) * (0.5 + 0.5 * rand())
        if kind == "band":
            low, width = 1.0 - self.band, 2.0 * self.band
            return lambda k: (table[k] if k <= last else cap) * (low + width * rand())
        base = self.base
        previous = [base]

        def decorrelated(k: int) -> float:
            value = min(cap, uniform(base, previous[0] * 3))
            previous[0] = value
            return value

        return decorrelated


def _zero(k: int) -> float:
    return 0.0


def builtin(kind: str, *, base: float = 0.005, cap: float = 2.0, **options: Any) -> Backoff:
    """A built-in strategy by name (defaults: the AWS comparison's base 5 ms, cap 2 s)."""
    __tracebackhide__ = True
    return Backoff(kind, base=base, cap=cap, **options)


class PolicyStrategy(Strategy):
    """The policy ``retrylint`` extracted from a retry site, run as a simulation strategy.

    The delay before retry k is drawn uniformly from the range that
    ``retrylint.schedule.delay_range`` gives for it (every jitter kind of the model is a
    uniform draw; no jitter is the single value), so the simulation agrees with
    ``retrylint explain``. Decorrelated jitter gets the previous *drawn* delay. Jitter the policy
    draws before its cap (stamina, redis-py, ``min(cap, uniform(0, d))``) is drawn over the
    uncapped range and then clamped, as the code does: the share of clients exactly on the cap
    is the real one.

    Values the checker could not read statically (``UNKNOWN``) cannot be simulated: pass
    ``max_attempts=``/``deadline=`` to stand in for an unknown bound.
    """

    def __init__(self, policy: Any, *, max_attempts: Optional[int] = None, deadline: Optional[float] = None, name: str = "") -> None:
        __tracebackhide__ = True
        from retrylint.model import DelayKind, JitterKind, RetryPolicy, known

        if not isinstance(policy, RetryPolicy):
            raise TypeError(f"PolicyStrategy needs a retrylint.model.RetryPolicy, not {type(policy).__name__}")
        self.policy = policy
        where = f"line {policy.location.line}"
        self.name = name or f"{policy.description or policy.source} ({where})"
        bound = policy.bound
        self.max_attempts = _attempts(max_attempts) if max_attempts is not None else _known_bound("attempts", bound.attempts, where)
        if deadline is not None:
            self.deadline = _positive("deadline", deadline)
        else:
            value = _known_bound("deadline", bound.deadline, where)
            self.deadline = None if value is None else float(value)
        if self.max_attempts is not None:
            self.max_attempts = int(self.max_attempts)
        delay = policy.delay
        if delay.kind is DelayKind.UNKNOWN:
            raise ValueError(f"the retry site at {where} waits, but retrylint cannot tell how long ({delay.text or 'unknown delay'}): nothing to simulate")
        self._decorrelated = delay.jitter.kind is JitterKind.DECORRELATED
        self.stateless = not self._decorrelated
        # Jitter drawn before the cap (stamina, redis-py, ``min(cap, uniform(0, d))``): draw over
        # the uncapped range, then clamp, so the share of clients sitting exactly on the cap is
        # the real one (a uniform draw over the clamped range would spread them under it).
        self._clamp_after: Optional[float] = None
        if delay.jitter_then_cap and known(delay.cap):
            self._clamp_after = float(delay.cap)
        first = self._range(1, None)
        if not (known(first.low) and known(first.high)):
            missing = [n for n in ("base", "factor", "step", "cap") if getattr(delay, n) is not None and not known(getattr(delay, n))]
            if delay.jitter.kind is JitterKind.UNKNOWN or (delay.jitter.present and not known(delay.jitter.amount) and delay.jitter.kind in (JitterKind.ADDITIVE, JitterKind.PROPORTIONAL)):
                missing.append("jitter")
            raise ValueError(
                f"the delay of the retry site at {where} ({delay.text or delay.kind.value}) is not fully known to retrylint "
                f"({', '.join(missing) or 'its shape'} set by a value it cannot read): nothing to simulate"
            )
        self._table: List[Tuple[float, float]] = [(0.0, 0.0)]

    def _range(self, k: int, previous: Optional[float]) -> Any:
        from retrylint.schedule import DelayRange, delay_range

        prior = None if previous is None else DelayRange(previous, previous, previous)
        delay = self.policy.delay
        if self._clamp_after is not None:
            from dataclasses import replace

            delay = replace(delay, cap=None, jitter_then_cap=False)
        return delay_range(delay, k, prior)

    def _low_span(self, k: int, previous: Optional[float]) -> Tuple[float, float]:
        from retrylint.model import known

        r = self._range(k, previous)
        if not (known(r.low) and known(r.high)):  # cannot happen once the first one is known; be explicit
            raise ValueError(f"retrylint gives no delay range for retry {k} of {self.name}")
        low, high = float(r.low), float(r.high)
        if high == math.inf:  # an uncapped exponential overflowed: the client waits past any horizon
            return math.inf, 0.0
        return low, high - low

    def sampler(self, rng: random.Random) -> DelayFn:
        rand = rng.random
        cap = self._clamp_after
        if self._decorrelated:
            previous: List[Optional[float]] = [None]

            def decorrelated(k: int) -> float:
                low, span = self._low_span(k, previous[0])
                value = low + span * rand()
                if cap is not None:
                    value = min(cap, value)
                previous[0] = value
                return value

            return decorrelated
        table = self._table

        def delay(k: int) -> float:
            # Ranges do not depend on what was drawn: compute each retry's once, for every client.
            while len(table) <= k:
                table.append(self._low_span(len(table), None))
            low, span = table[k]
            value = low + span * rand() if span else low
            return value if cap is None else min(cap, value)

        return delay

    def __repr__(self) -> str:
        return f"<PolicyStrategy {self.name}: attempts={self.max_attempts} deadline={self.deadline}>"


def _known_bound(name: str, value: Any, where: str) -> Optional[float]:
    __tracebackhide__ = True
    from retrylint.model import known

    if value is None or known(value):
        return value
    raise ValueError(
        f"the retry site at {where} is bounded by {name} that retrylint cannot read statically; "
        f"pass max_attempts=/deadline= to simulate it"
    )


def policy_at(path: Union[str, Path], line: int) -> Any:
    """The :class:`retrylint.model.RetryPolicy` of the retry site at ``path``:``line``: a line
    anywhere in the loop, function or decorated definition, or a line ``retrylint check`` reports
    for the site (its decorator, ``@stamina.retry(...)`` over several lines, or where the policy's
    arguments are built). The site is chosen as ``retrylint explain PATH:LINE`` chooses it (the
    innermost site wins)."""
    __tracebackhide__ = True
    from retrylint.engine import SourceError, check_source, decode_source, settings_with
    from retrylint.explain import select_sites

    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise ValueError(f"line must be a line number >= 1, got {line!r}")
    path = Path(path)
    try:
        text = decode_source(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except SourceError as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    report = check_source(text, str(path), settings_with(()), want_policies=True)
    if report.findings:  # with no rule enabled, only a syntax error is reported
        finding = report.findings[0]
        raise ValueError(f"{path}:{finding.location.line}: {finding.message}")
    if report.error or report.notice:
        raise ValueError(f"retrylint could not analyse {path}: {report.error or report.notice}")
    found = select_sites(list(report.policies), line)
    if not found:
        sites = ", ".join(str(n) for n in sorted({p.location.line for p in report.policies})) or "none"
        raise ValueError(f"no retry site contains {path}:{line} (retry sites found at lines: {sites})")
    return found[0]


def parse_site(spec: str) -> Optional[Tuple[str, int]]:
    """``"path.py:LINE"`` (or ``path.py:LINE:COL``, a location as ``retrylint check`` prints it)
    → ``(path, LINE)``; anything else → None. Parsed as ``retrylint explain`` parses its target."""
    from retrylint.explain import parse_target

    path, line = parse_target(spec.strip())
    return None if line is None else (path, line)


def as_strategy(policy: Any) -> Strategy:
    """A :class:`Strategy` from a strategy, a ``RetryPolicy``, a built-in kind name
    (``"full"``), or a retry site ``"path.py:LINE"``."""
    __tracebackhide__ = True
    if isinstance(policy, Strategy):
        return policy
    if isinstance(policy, str):
        if policy in KINDS:
            return builtin(policy)
        site = parse_site(policy)
        if site is not None:
            return PolicyStrategy(policy_at(*site))
        raise ValueError(f"unknown strategy {policy!r}: use one of {', '.join(KINDS)} or a retry site as 'path.py:LINE'")
    if isinstance(policy, tuple) and len(policy) == 2 and isinstance(policy[1], int):
        return PolicyStrategy(policy_at(policy[0], policy[1]))
    try:
        from retrylint.model import RetryPolicy
    except ImportError:  # pragma: no cover - the distribution ships both halves
        RetryPolicy = ()  # type: ignore[assignment,misc]
    if isinstance(policy, RetryPolicy):
        return PolicyStrategy(policy)
    raise TypeError(f"cannot simulate {policy!r}: pass a Strategy, a retrylint RetryPolicy, a built-in name or 'path.py:LINE'")

"""The retry-policy model: one value per retry site, whatever wrote it.

Extractors (hand-written loops, recursion, one per retry library) build a
:class:`RetryPolicy`; rules judge it; ``retrylint explain`` and the pytest
plugin's simulations compute schedules from it.  Every number is either known
(a float/int), absent (``None``: the policy really has no such limit) or
:data:`UNKNOWN` (the code sets it, but not to a value we can read statically).
Rules never guess from an unknown value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Tuple, Union


class _Unknown:
    """A value the code sets but that static analysis cannot read."""

    _instance: Optional["_Unknown"] = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()

#: A number that may be known, absent (None) or unknown.
Num = Union[float, int, None, _Unknown]


def known(value: object) -> bool:
    """True when ``value`` is a real number (not None, not UNKNOWN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class DelayKind(str, enum.Enum):
    NONE = "none"  # the next attempt starts at once
    FIXED = "fixed"  # the same delay before every retry
    LINEAR = "linear"  # base, base + step, base + 2 step, ...
    EXPONENTIAL = "exponential"  # base, base * factor, base * factor**2, ...
    STEPS = "steps"  # an explicit list of delays; the last one repeats
    UNKNOWN = "unknown"  # there is a delay, but its shape is not known


class JitterKind(str, enum.Enum):
    NONE = "none"
    FULL = "full"  # uniform(0, d)
    EQUAL = "equal"  # d/2 + uniform(0, d/2)
    DECORRELATED = "decorrelated"  # min(cap, uniform(base, previous * 3))
    ADDITIVE = "additive"  # d + uniform(0, amount)
    PROPORTIONAL = "proportional"  # d * uniform(1 - amount, 1 + amount)
    UNKNOWN = "unknown"  # randomness of an unknown shape


@dataclass(frozen=True)
class Jitter:
    kind: JitterKind = JitterKind.NONE
    #: ADDITIVE: the largest added seconds; PROPORTIONAL: the relative band (0.5 = ±50 %).
    amount: Num = None

    @property
    def present(self) -> bool:
        return self.kind is not JitterKind.NONE


NO_JITTER = Jitter()


@dataclass(frozen=True)
class Delay:
    """The delay schedule between attempts.

    ``base`` is the delay before the first retry (before jitter).  ``factor``
    is the exponential multiplier, ``step`` the linear increment, ``cap`` the
    largest single delay (None: no cap).
    """

    kind: DelayKind
    base: Num = None
    factor: Num = None
    step: Num = None
    cap: Num = None
    steps: Optional[Tuple[float, ...]] = None
    jitter: Jitter = NO_JITTER
    #: Source text of the delay, for messages (e.g. ``2 ** attempt``).
    text: str = ""
    #: A delay chosen by the server (Retry-After) may replace the schedule.
    honours_retry_after: bool = False
    #: The first retry starts at once and the schedule (``base`` …) applies from the
    #: second retry on: urllib3's ``Retry`` and httpcore's connection retries do this.
    first_immediate: bool = False
    #: The cap clamps the *jittered* delay, ``min(cap, d + jitter)`` (stamina, tenacity
    #: ``wait_exponential_jitter``), not ``d`` before the jitter: once ``d`` alone reaches the
    #: cap, every client waits exactly the cap (RTY504).
    jitter_then_cap: bool = False
    #: Exponential only: a constant added to ``base * factor ** (k - 1)`` before the cap
    #: (``0.1 * (2 ** n - 1)`` waits 0, 0.1, 0.3, 0.7 s …, not 0.1, 0.2, 0.4 s).
    offset: Num = 0.0

    @property
    def grows_exponentially(self) -> bool:
        if self.kind is DelayKind.EXPONENTIAL:
            if known(self.base) and known(self.cap) and self.base >= self.cap:  # type: ignore[operator]
                return False  # already at the cap: a constant delay
            return not known(self.factor) or self.factor > 1  # type: ignore[operator]
        if self.kind is DelayKind.STEPS and self.steps and len(self.steps) >= 3:
            return _steps_exponential(self.steps)
        return False

    @property
    def is_constant(self) -> bool:
        if self.kind is DelayKind.FIXED:
            return True
        if self.kind is DelayKind.EXPONENTIAL and known(self.base) and known(self.cap) and self.base >= self.cap:  # type: ignore[operator]
            return True
        if self.kind is DelayKind.STEPS and self.steps:
            return len(set(self.steps)) == 1
        return False

    @property
    def has_cap(self) -> bool:
        if self.kind is DelayKind.STEPS:
            return True  # the last step repeats
        return self.cap is not None


def _steps_exponential(steps: Tuple[float, ...]) -> bool:
    """Explicit steps that at least double (roughly) from step to step."""
    ratios = [b / a for a, b in zip(steps, steps[1:]) if a > 0]
    return bool(ratios) and len(ratios) == len(steps) - 1 and all(r >= 1.5 for r in ratios)


NO_DELAY = Delay(DelayKind.NONE)
UNKNOWN_DELAY = Delay(DelayKind.UNKNOWN)


@dataclass(frozen=True)
class Bound:
    """When the policy gives up.

    ``attempts`` counts every call including the first.  ``None`` means "no
    limit of this kind", :data:`UNKNOWN` means "limited, by a value we cannot
    read" (a parameter, a config lookup).
    """

    attempts: Num = None
    deadline: Num = None
    text: str = ""
    #: The library shortens the last wait to what is left of the deadline (backoff's ``max_time``).
    clips_to_deadline: bool = False

    @property
    def unbounded(self) -> bool:
        return self.attempts is None and self.deadline is None

    @property
    def never_retries(self) -> bool:
        """A single attempt (``stop_after_attempt(1)``, ``max_retries=0``): nothing to judge."""
        return known(self.attempts) and float(self.attempts) <= 1  # type: ignore[arg-type]

    @property
    def retries(self) -> Num:
        if known(self.attempts):
            return max(int(self.attempts) - 1, 0)  # type: ignore[arg-type]
        return self.attempts


UNBOUNDED = Bound()


@dataclass(frozen=True)
class Location:
    line: int
    column: int  # 1-based, as ruff prints it
    end_line: int
    end_column: int

    @property
    def lines(self) -> range:
        return range(self.line, self.end_line + 1)


class CatchKind(str, enum.Enum):
    NAMED = "named"  # except SomeError
    CATCH_ALL = "catch-all"  # except Exception / BaseException / bare except
    PREDICATE = "predicate"  # a library predicate we cannot read


@dataclass(frozen=True)
class RetriedError:
    """One clause that decides which failures are retried."""

    kind: CatchKind
    #: Qualified names of the exception classes (``requests.exceptions.HTTPError``).
    names: Tuple[str, ...] = ()
    #: Is there an exit for permanent errors before this clause retries?
    permanent_exit_before: bool = False
    #: Does the clause look at the failure's HTTP status before retrying?
    checks_status: bool = False
    #: The operation that raises (e.g. ``raise_for_status`` was called).
    raises_http_status: bool = False
    location: Optional[Location] = None
    text: str = ""


@dataclass(frozen=True)
class RetriedStatuses:
    """HTTP statuses that lead to a retry: an explicit set, or a test we could read."""

    statuses: Tuple[int, ...]
    location: Optional[Location] = None
    text: str = ""

    @property
    def permanent(self) -> Tuple[int, ...]:
        return tuple(s for s in self.statuses if 400 <= s < 500 and s not in (408, 429))


class GiveUp(str, enum.Enum):
    RAISE = "raise"
    RETURN = "return"
    DEAD_LETTER = "dead-letter"
    UNKNOWN = "unknown"
    NEVER = "never"


@dataclass(frozen=True)
class RetryPolicy:
    """One retry site and the policy it implements."""

    #: What wrote the policy: ``loop``, ``recursion``, ``tenacity``, ``backoff`` ...
    source: str
    bound: Bound
    delay: Delay
    location: Location
    errors: Tuple[RetriedError, ...] = ()
    statuses: Optional[RetriedStatuses] = None
    give_up: GiveUp = GiveUp.UNKNOWN
    #: Lines on which a ``# noqa`` comment suppresses this site's findings.
    header_lines: Tuple[int, ...] = ()
    #: Where the delay is written (the sleep call), when there is one place.
    delay_location: Optional[Location] = None
    #: Failures retried with no delay at all while other failures wait (the delay is
    #: then of no single shape): exception names, or "HTTP statuses".
    immediate_on: Tuple[str, ...] = ()
    #: The whole site: the loop, the function or the decorated definition.
    extent: Optional[Location] = None
    #: A short description for messages: "while-loop retry", "tenacity @retry" ...
    description: str = ""
    #: The operation retried, as source text, where one call stands out.
    operation: str = ""
    is_async: bool = False
    #: The syntax nodes behind the site (the configuring call, the sleep call), for
    #: ``--fix``. Not part of the model's value.
    anchor: Any = field(default=None, compare=False, repr=False)
    delay_anchor: Any = field(default=None, compare=False, repr=False)
    #: Values read away from the site (``self.delay`` set in ``__init__``, an imported
    #: constant), each as "`expr` = value: where it was found" (``explain`` shows them).
    origins: Tuple[str, ...] = ()
    #: The delay comes from a delay strategy of another module (``path:line``), judged there:
    #: RTY203/RTY204 are not reported again at this retry.
    delay_strategy: str = ""
    #: Calls inside the retried operation that retry on their own (RTY501), innermost last.
    inner: Tuple["RetryLayer", ...] = ()
    #: Another use of a policy built in one place (``@retry(**RETRY_ARGS)`` twice): judged at
    #: that place once (``line 12``), its findings are not repeated for this use.
    judged_at: str = ""

    @property
    def is_library(self) -> bool:
        return self.source not in ("loop", "recursion")

    def with_(self, **changes: object) -> "RetryPolicy":
        return replace(self, **changes)  # type: ignore[arg-type]


#: Task-queue retries (celery ``autoretry_for``/``self.retry``, dramatiq): calling the task
#: function directly does not retry (celery's ``retry()`` re-raises when ``called_directly``),
#: so a task decorator is no retry layer around a call of it.
TASK_QUEUE_SOURCES = ("celery", "dramatiq")


@dataclass(frozen=True)
class RetryLayer:
    """A call inside a retried operation that carries a retry policy of its own: a session
    mounted with a retrying adapter, a client built with retries, a function with a retry
    decorator. Retrying around it multiplies the attempts (RTY501)."""

    #: The call as the code writes its callee (``self.session.get``).
    call: str
    location: Location
    #: The policy the call carries.
    policy: RetryPolicy
    #: How the call carries it, for messages: "mounted on `self.session` (line 12)".
    via: str = ""
    #: Where the policy is when it is in another file (``pkg/client.py:12``); else its line here.
    where: str = ""


class DeadLetterKind(str, enum.Enum):
    WRITE = "write"  # sends a message to a dead-letter queue
    REPLAY = "replay"  # moves dead letters back to a work queue


@dataclass(frozen=True)
class DeadLetterOperation:
    """One place where code writes to, or replays from, a dead-letter queue."""

    kind: DeadLetterKind
    location: Location
    #: Broker family: ``sqs``, ``rabbitmq``, ``kombu``, ``celery``, ``kafka``, ``redis``, ``pubsub``,
    #: ``servicebus``, ``unknown``.
    broker: str = "unknown"
    #: The dead-letter queue as the code names it (a literal, a name, an f-string).
    queue: str = ""
    #: For a replay: where the messages go.
    destination: str = ""
    #: What runs it: ``consumer``, ``scheduled``, ``forever-loop``, ``cli``, ``unknown``.
    trigger: str = "unknown"
    #: True when it runs without a human deciding (consumer, schedule, loop).
    automatic: Optional[bool] = None
    #: Context carried with a dead letter: ``message``, ``reason``, ``attempts``, ``first_received``.
    carries: Tuple[str, ...] = ()
    #: The context a dead letter lacks (empty when complete or unknown).
    missing: Tuple[str, ...] = ()
    rate_limited: Optional[bool] = None
    batch_limited: Optional[bool] = None
    header_lines: Tuple[int, ...] = ()
    extent: Optional[Location] = None
    description: str = ""
    #: For a replay: the header of the loop that moves the dead letters (``for``/``while``
    #: up to its colon); None when one call moves them (SQS ``start_message_move_task``).
    loop_location: Optional[Location] = None
    #: The replay loop as the code writes it, for messages (``while True``).
    loop_text: str = ""
    #: Why it is automatic or human-triggered, for messages: "in `requeue`, a pika
    #: consumer callback on `orders.dlq` (line 12)".
    trigger_detail: str = ""


@dataclass(frozen=True)
class VisibilityWindow:
    """RTY502: how long a queue hides a message from other consumers, against how long the
    consumer can hold it (a handler time limit, a retry's worst-case wait, a held countdown)."""

    location: Location
    #: ``sqs``, ``celery``, ``pubsub``, ``servicebus``.
    broker: str
    #: The visibility timeout / ack deadline / lock duration in seconds, and where it is set.
    window: Num
    window_text: str
    #: The longest time the consumer can hold the message before it acks, and what sets it.
    holds: Num
    holds_text: str
    #: A heartbeat extends the window (``change_message_visibility``, ``modify_ack_deadline``, …).
    heartbeat: bool = False
    header_lines: Tuple[int, ...] = ()
    extent: Optional[Location] = None


@dataclass(frozen=True)
class RetriedCreate:
    """RTY503: an operation that creates something (a POST, an INSERT, a charge) run again by a retry."""

    location: Location
    #: What it creates, for messages: ``HTTP POST``, ``SQL INSERT``, ``stripe.Charge.create``.
    operation: str
    #: The retry that repeats it: its description and line.
    retry: str
    #: An idempotency key (header, keyword, dedup id, condition, upsert) makes a repeat harmless.
    keyed: Optional[bool] = False
    #: What the call needs so that a repeat is harmless (``an `Idempotency-Key` header``).
    advice: str = ""
    header_lines: Tuple[int, ...] = ()
    extent: Optional[Location] = None


__all__ = [
    "UNKNOWN",
    "Num",
    "known",
    "DelayKind",
    "JitterKind",
    "Jitter",
    "NO_JITTER",
    "Delay",
    "NO_DELAY",
    "UNKNOWN_DELAY",
    "Bound",
    "UNBOUNDED",
    "Location",
    "CatchKind",
    "RetriedError",
    "RetriedStatuses",
    "GiveUp",
    "RetryPolicy",
    "RetryLayer",
    "DeadLetterKind",
    "DeadLetterOperation",
    "VisibilityWindow",
    "RetriedCreate",
]

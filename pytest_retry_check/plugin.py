"""pytest entry point (``pytest11``) of pytest_retry_check.

It loads in every pytest run where the package is installed, so it imports nothing heavy and
patches nothing until a test asks for ``fake_clock``, ``fake_downstream``, ``dead_letters`` or
``herd_check``.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Generator, List

import pytest

if TYPE_CHECKING:
    from .clock import FakeClock
    from .dead_letters import DeadLetters
    from .dispersion import HerdCheck
    from .downstream import FakeDownstream
    from .redelivery import FakeBroker

FIXTURES = ("fake_clock", "fake_downstream", "dead_letters", "herd_check", "fake_queue")
_CALL_REPORT = pytest.StashKey[Any]()

_INI = {
    "retry_check_max_sleeps": ("sleeps after which the fake clock's guard fails the test (forever-retry)", "1000"),
    "retry_check_max_virtual_time": ("virtual seconds after which the fake clock's guard fails the test", str(30 * 24 * 3600)),
    "retry_check_max_calls": ("calls after which a fake downstream's guard fails the test", "10000"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, (help_text, default) in _INI.items():
        parser.addini(name, help_text, default=default)
    parser.getgroup("retry_check", "retry checks (pytest_retry_check)").addoption(
        "--retry-check-report",
        action="store_true",
        default=False,
        help="after the run, one line per fake downstream and herd check of each test: calls, waits, last answer",
    )


def _reporting(config: pytest.Config) -> bool:
    return bool(config.getoption("retry_check_report", False))


class _RetryCheckReport:
    """Registered only with --retry-check-report: gathers the lines (from xdist workers too,
    as user_properties) and prints them at the end."""

    def __init__(self) -> None:
        self.entries: List[Any] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.entries.extend((report.nodeid, value) for key, value in report.user_properties if key == "retry_check")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .report import TITLE, terminal_lines

        terminalreporter.write_sep("=", TITLE)
        if not self.entries:
            terminalreporter.write_line("no test used fake_downstream or herd_check")
        for line in terminal_lines(self.entries):
            terminalreporter.write_line(line)


#: The forever-retry guard's sleep limit in a hypothesis ``@given`` test, unless set on the
#: marker or in the ini file: each example that retries forever runs to the limit, and
#: shrinking runs hundreds of them (at 1,000 sleeps a forever-retry took ~25 s to report).
GIVEN_MAX_SLEEPS = 100


def _see_broad_pytest_raises() -> None:
    """``pytest.raises(BaseException)`` (or any type above the guard's) catching a guard trip
    makes it expected too: the guard's metaclass only sees ``isinstance`` checks against its
    own classes, so the raises context's ``__exit__`` is wrapped (once; nothing is imported)."""
    for module_name, class_name in (("_pytest.raises", "RaisesExc"), ("_pytest.python_api", "RaisesContext")):
        cls = getattr(sys.modules.get(module_name), class_name, None)
        original = getattr(cls, "__exit__", None)
        if original is None or getattr(original, "_retry_check", False):
            continue

        def __exit__(self: Any, exc_type: Any, exc_val: Any, exc_tb: Any, _original: Any = original) -> Any:
            __tracebackhide__ = True
            caught = _original(self, exc_type, exc_val, exc_tb)
            timeline = sys.modules.get("pytest_retry_check.timeline")
            if caught and timeline is not None and isinstance(exc_val, timeline.RetryGuardTripped):
                exc_val.expected_by_test = True
                timeline._rearm_clock_of(exc_val)
            return caught

        __exit__._retry_check = True  # type: ignore[attr-defined]
        cls.__exit__ = __exit__  # type: ignore[union-attr]


def pytest_configure(config: pytest.Config) -> None:
    _see_broad_pytest_raises()
    if _reporting(config) and not hasattr(config, "workerinput"):  # xdist workers send, the controller prints
        config.pluginmanager.register(_RetryCheckReport(), "retry_check_report")
    # Checked once here: a bad value is one start-up error, not one error per test.
    for name in _INI:
        _ini_number(config, name, float if name == "retry_check_max_virtual_time" else int)
    config.addinivalue_line(
        "markers",
        "fake_clock(start=None, max_sleeps=1000, max_virtual_time=2592000, max_calls=10000, seed=None, io_grace=0.002, "
        "io_wait_limit=10.0, max_real_wait=1.0): settings of the fake_clock fixture and of the fake_downstream "
        f"fixture's call limit (pytest_retry_check); under hypothesis' @given max_sleeps defaults to {GIVEN_MAX_SLEEPS}",
    )
    config.addinivalue_line(
        "markers",
        "herd_check(clients=300, window=0.1, max_peak_share=0.4, min_spread=0.15, max_identical_share=0.5, from_retry=1, "
        "**scenario): defaults of the herd_check fixture (pytest_retry_check)",
    )


def _ini_number(config: pytest.Config, name: str, kind: Callable[[str], Any]) -> Any:
    raw = config.getini(name)
    try:
        value = kind(str(raw).strip())
    except ValueError:
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not a {'whole number' if kind is int else 'number'}") from None
    if not value > 0:
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be > 0")
    return value


def _marker_settings(request: pytest.FixtureRequest) -> Dict[str, Any]:
    marker = request.node.get_closest_marker("fake_clock")
    if marker is None:
        return {}
    if marker.args:
        pytest.fail("@pytest.mark.fake_clock takes keyword arguments only, e.g. fake_clock(max_sleeps=50)", pytrace=False)
    return dict(marker.kwargs)


def _under_given(request: pytest.FixtureRequest) -> bool:
    return bool(getattr(getattr(request.node, "obj", None), "is_hypothesis_test", False))


def _clock_settings(request: pytest.FixtureRequest) -> Dict[str, Any]:
    settings: Dict[str, Any] = {
        "max_sleeps": _ini_number(request.config, "retry_check_max_sleeps", int),
        "max_virtual_time": _ini_number(request.config, "retry_check_max_virtual_time", float),
    }
    marker = _marker_settings(request)
    marker.pop("max_calls", None)  # the fake_downstream fixture's
    explicit = "max_sleeps" in marker or str(request.config.getini("retry_check_max_sleeps")).strip() != _INI["retry_check_max_sleeps"][1]
    settings.update(marker)
    if not explicit and _under_given(request):
        settings["max_sleeps"] = min(settings["max_sleeps"], GIVEN_MAX_SLEEPS)
    return settings


GIVEN_HINT = (
    f"Under hypothesis' @given the limit defaults to max_sleeps={GIVEN_MAX_SLEEPS} (each example that retries forever "
    "runs to it, and shrinking runs hundreds); raise it with @pytest.mark.fake_clock(max_sleeps=...) if this much "
    "retrying is intended."
)


_CAPTURED_REPORTED = pytest.StashKey[set]()


@pytest.fixture
def fake_clock(request: pytest.FixtureRequest) -> Generator["FakeClock", None, None]:
    """Virtual time for this test: sleeps return at once and are recorded; a forever-retry
    fails fast. Configure with ``@pytest.mark.fake_clock(...)``."""
    from .clock import FakeClock

    settings = _clock_settings(request)
    try:
        clock = FakeClock(**settings)
    except (TypeError, ValueError) as exc:
        pytest.fail(f"fake_clock: {exc}", pytrace=False)
    if _under_given(request) and settings["max_sleeps"] == GIVEN_MAX_SLEEPS:
        clock.hint = GIVEN_HINT
    # A FakeDownstream(...) the test builds itself takes its call limit from here too.
    clock.default_max_calls = _max_calls(request)
    from . import realtime

    idle_at_start = realtime.idle_seconds()
    clock.start()
    try:
        # Real clock/sleep functions captured before the clock started, reachable from the
        # test's module: reported once per session (CapturedClockWarning).
        clock.captured_reported = request.config.stash.setdefault(_CAPTURED_REPORTED, set())
        module = getattr(request.node, "module", None)
        if module is not None:
            clock.warn_captured(clock.scan_captured(modules=[module]))
        yield clock
    finally:
        clock.stop()
    _warn_if_waited_for_real(clock, realtime.idle_seconds() - idle_at_start)
    report = request.node.stash.get(_CALL_REPORT, None)
    expected = clock.tripped is not None and clock.tripped.expected_by_test  # caught by pytest.raises
    if clock.tripped is not None and not expected and report is not None and report.passed:
        pytest.fail(f"the retry guard tripped but the code under test swallowed it:\n{clock.tripped}", pytrace=False)


from ._warnings import CapturedClockWarning, RealTimeWarning  # noqa: E402,F401  (public: pytest_retry_check.RealTimeWarning)


def _warn_if_waited_for_real(clock: "FakeClock", idle: float) -> None:
    # The downstream catches a real sleep between two of its calls; this catches the rest
    # (no downstream, or a real sleep after the last call) over the whole test, as a warning:
    # a test may wait for real on purpose (a subprocess, a thread joined without real_waits()).
    from . import realtime

    limit = clock.max_real_wait
    if limit is None or clock.real_wait_entries or idle <= 2 * limit:
        return
    virtual = clock.virtual_elapsed()
    if virtual >= idle / 2:
        return
    held = realtime.holders()
    where = f"; real sleep functions held at: {'; '.join(held)}" if held else ""
    import warnings

    warnings.warn(
        RealTimeWarning(
            f"the test waited {idle:.1f} real seconds while its fake clock moved {virtual:.3f} s: a sleep function "
            f"captured before the clock started sleeps for real{where}. (Waiting on purpose? use fake_clock.real_waits(), "
            "or @pytest.mark.fake_clock(max_real_wait=None).)"
        ),
        stacklevel=2,
    )


class DownstreamFactory:
    """What the ``fake_downstream`` fixture gives: call it with a script to get a
    :class:`~pytest_retry_check.downstream.FakeDownstream`; all are closed after the test."""

    def __init__(self, clock: "FakeClock", max_calls: int) -> None:
        self.clock = clock
        self.max_calls = max_calls
        self.made: List["FakeDownstream"] = []

    def __call__(self, scenario: Any = None, **script: Any) -> "FakeDownstream":
        __tracebackhide__ = True
        from .downstream import FakeDownstream

        script.setdefault("max_calls", self.max_calls)
        downstream = FakeDownstream(scenario, clock=self.clock, **script)
        self.made.append(downstream)
        return downstream

    def close(self) -> None:
        while self.made:
            self.made.pop().close()


def _max_calls(request: pytest.FixtureRequest) -> int:
    return _marker_settings(request).get("max_calls", _ini_number(request.config, "retry_check_max_calls", int))


@pytest.fixture
def fake_downstream(fake_clock: "FakeClock", request: pytest.FixtureRequest) -> Generator[DownstreamFactory, None, None]:
    """A factory of scripted failing downstreams (callable, async and HTTP) on the fake clock:
    ``ds = fake_downstream(fail_first=2)``."""
    factory = DownstreamFactory(fake_clock, _max_calls(request))
    try:
        yield factory
    finally:  # --retry-check-report: each downstream is a line (see pytest_runtest_makereport)
        factory.close()


@pytest.fixture
def dead_letters() -> Generator["DeadLetters", None, None]:
    """A dead-letter queue capture: pass it to the code as its DLQ, or ``dead_letters.patch(...)``."""
    from .dead_letters import DeadLetters

    capture = DeadLetters()
    try:
        yield capture
    finally:
        capture.restore()


@pytest.fixture
def fake_queue(fake_clock: "FakeClock", request: pytest.FixtureRequest) -> Generator["FakeBroker", None, None]:
    """Queues with SQS's redelivery semantics on the test's clock: ``q = fake_queue("orders",
    visibility_timeout=30, max_receive_count=3)``; ``fake_queue.kombu_connection()`` and
    ``fake_queue.sqs_client()`` reach the same queues."""
    from .redelivery import FakeBroker

    broker = FakeBroker(clock=fake_clock)
    try:
        yield broker
    finally:
        if _reporting(request.config):
            for queue in broker.queues.values():
                if queue.sent or queue.deliveries:
                    request.node.user_properties.append(("retry_check", queue.report_line()))
        broker.close()


@pytest.fixture
def herd_check(request: pytest.FixtureRequest) -> "HerdCheck":
    """The herd check: ``herd_check(client)`` runs your retry code as a few hundred clients that
    fail together and fails the test if they retry together. Defaults from
    ``@pytest.mark.herd_check(...)``. Stateless, so it is safe under hypothesis' ``@given``."""
    from .dispersion import HerdCheck

    marker = request.node.get_closest_marker("herd_check")
    if marker is not None and marker.args:
        pytest.fail("@pytest.mark.herd_check takes keyword arguments only, e.g. herd_check(clients=500)", pytrace=False)
    try:
        check = HerdCheck(**(marker.kwargs if marker is not None else {}))
    except TypeError as exc:
        pytest.fail(f"herd_check: {exc}", pytrace=False)
    return check  # --retry-check-report: each report is a line (see pytest_runtest_makereport)


def _swallowed() -> List[BaseException]:
    # Only once a capture_trace ran in this process: a suite that never uses one imports nothing.
    trace = sys.modules.get("pytest_retry_check.trace")
    return trace.SWALLOWED if trace is not None else []  # type: ignore[attr-defined]


def pytest_runtest_setup(item: pytest.Item) -> None:
    del _swallowed()[:]
    if _reporting(item.config):
        from . import report

        report.COLLECTED = []  # every downstream and herd check the test makes, whoever makes it


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
    report = yield
    if report.when == "call" and any(name in getattr(item, "funcargs", {}) for name in FIXTURES):
        item.stash[_CALL_REPORT] = report
    if report.when == "teardown" and _reporting(item.config):
        from . import report as collected  # as FakeDownstream reaches it (pytester may drop sys.modules entries)

        if collected.COLLECTED is not None:
            things, collected.COLLECTED = collected.COLLECTED, None
            examples = bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))
            report.user_properties = list(report.user_properties) + [
                ("retry_check", line) for line in collected.test_lines(things, examples=examples)
            ]
    swallowed = _swallowed()
    if report.failed and swallowed:
        from .trace import describe_swallowed

        report.sections.append(("exceptions swallowed by capture_trace (recorded as the run raising)", describe_swallowed(swallowed)))
    return report


# -- hypothesis: a fresh clock, downstreams and dead letters for every example --------------
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    funcargs = getattr(item, "funcargs", {})
    test = getattr(item, "obj", None)
    ours = [name for name in FIXTURES if name in funcargs]
    if not ours or not getattr(test, "is_hypothesis_test", False) or not hasattr(test, "hypothesis"):
        return (yield)
    undo = _reset_per_example(item, test, {name: funcargs[name] for name in ours})
    try:
        return (yield)
    finally:
        undo()


class RetryGuardExample(AssertionError):
    """The retry guard tripped in one hypothesis example."""


def _reset_per_example(item: pytest.Item, test: Any, values: Dict[str, Any]) -> Callable[[], None]:
    from .timeline import RetryGuardTripped

    def reset() -> None:
        if "fake_downstream" in values:
            values["fake_downstream"].close()
        if "dead_letters" in values:
            values["dead_letters"].clear()
        if "fake_queue" in values:
            values["fake_queue"].reset()
        if "fake_clock" in values:
            values["fake_clock"].reset()

    tripped = [False]

    def fail_instead(exc: RetryGuardTripped) -> None:
        # Hypothesis only shrinks (and reports the falsifying example of) failures it can
        # catch; the guard is a BaseException so that retry loops cannot catch it.
        __tracebackhide__ = True
        tripped[0] = True
        raise RetryGuardExample(str(exc)) from None

    def not_swallowed() -> None:
        # The next example's reset() forgets the guard: a trip this example swallowed
        # (``except BaseException``) fails it now, so hypothesis shrinks to it.
        __tracebackhide__ = True
        clock = values.get("fake_clock")
        trip = getattr(clock, "tripped", None)
        if trip is not None and not trip.expected_by_test:
            tripped[0] = True
            raise RetryGuardExample(f"the retry guard tripped but the code under test swallowed it:\n{trip}")

    inner = test.hypothesis.inner_test
    if inspect.iscoroutinefunction(inner):

        @functools.wraps(inner)
        async def per_example(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            reset()
            try:
                value = await inner(*args, **kwargs)
            except RetryGuardTripped as exc:
                fail_instead(exc)
            not_swallowed()
            return value

    else:

        @functools.wraps(inner)
        def per_example(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            __tracebackhide__ = True
            reset()
            try:
                value = inner(*args, **kwargs)
            except RetryGuardTripped as exc:
                fail_instead(exc)
            not_swallowed()
            return value

    test.hypothesis.inner_test = per_example
    undo_settings = _allow_our_function_scoped_fixtures(item, test)
    undo_tracing = _no_tracing_after_a_trip(tripped)

    def undo() -> None:
        test.hypothesis.inner_test = inner
        undo_settings()
        undo_tracing()

    return undo


def _no_tracing_after_a_trip(tripped: List[bool]) -> Callable[[], None]:
    """After a first failure hypothesis runs every example under a line tracer (to explain the
    failure); a forever-retry example then costs ~10x more, and shrinking one took seconds.
    Once the guard tripped, examples run untraced (hypothesis supports patching this method)."""
    try:
        from hypothesis.core import StateForActualGivenExecution
    except ImportError:
        return lambda: None
    original = StateForActualGivenExecution.__dict__.get("_should_trace")
    if original is None:
        return lambda: None

    def _should_trace(self: Any) -> bool:
        return False if tripped[0] else original(self)

    StateForActualGivenExecution._should_trace = _should_trace  # type: ignore[method-assign]

    def undo() -> None:
        StateForActualGivenExecution._should_trace = original  # type: ignore[method-assign]

    return undo


def _allow_our_function_scoped_fixtures(item: pytest.Item, test: Any) -> Callable[[], None]:
    """Our fixtures are reset per example, so hypothesis' function_scoped_fixture health check
    does not apply to them; suppress it only when no *other* function-scoped fixture is used."""
    from hypothesis import HealthCheck, settings

    try:
        params = inspect.signature(item.function).parameters  # type: ignore[attr-defined]
        defs = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return lambda: None
    for name in params:
        if name not in FIXTURES and name in defs and defs[name] and defs[name][-1].scope == "function":
            return lambda: None
    target = getattr(test, "__func__", test)
    missing = object()
    previous = target.__dict__.get("_hypothesis_internal_use_settings", missing)
    current = getattr(target, "_hypothesis_internal_use_settings", settings.default)
    target._hypothesis_internal_use_settings = settings(
        parent=current, suppress_health_check=set(current.suppress_health_check) | {HealthCheck.function_scoped_fixture}
    )

    def undo() -> None:
        if previous is missing:
            target.__dict__.pop("_hypothesis_internal_use_settings", None)
        else:
            target._hypothesis_internal_use_settings = previous

    return undo

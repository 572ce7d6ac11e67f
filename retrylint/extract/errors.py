"""Except handlers: which exceptions a retry catches, and whether permanent errors get out first."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ..model import CatchKind, Location, RetriedError
from ..program import BUILTIN_EXCEPTIONS
from ..syntax import DEFERRED, EXITS, RAISE, dotted_name, if_branches, last_name, outcomes, statements, walk, walk_local
from ..summaries import CATCH_ALL, NOT_YET_ERRNO
from .context import ModuleContext
from .status import HTTP_ERROR_BASES, HTTP_STATUS_EXCEPTIONS, status_range, status_set


#: Exceptions that mean "not yet" or "interrupted", not "failed": loops that go
#: round again on them are polling or EINTR handling, which is correct.
NOT_YET = frozenset(
    {
        "queue.Empty",
        "queue.Full",
        "asyncio.QueueEmpty",
        "asyncio.QueueFull",
        "asyncio.queues.QueueEmpty",
        "multiprocessing.queues.Empty",
        "gevent.queue.Empty",
        "StopIteration",
        "StopAsyncIteration",
        "BlockingIOError",
        "InterruptedError",
        "ssl.SSLWantReadError",
        "ssl.SSLWantWriteError",
        "GeneratorExit",
        "KeyboardInterrupt",
        "SystemExit",
        "asyncio.CancelledError",
        "zmq.Again",
        "zmq.error.Again",
    }
)

#: The last part of a class name is enough for these: libraries re-export them under many paths.
NOT_YET_NAMES = frozenset(
    {
        "Empty", "Full", "QueueEmpty", "QueueFull", "WouldBlock", "Again", "ConnectionNotAvailable",
        "StopIteration", "StopAsyncIteration", "BlockingIOError", "InterruptedError", "SSLWantReadError",
        "SSLWantWriteError", "WantReadError", "WantWriteError", "WantX509LookupError", "GeneratorExit",
        "KeyboardInterrupt", "SystemExit", "CancelledError", "BLOCKING_IO_ERRORS", "BLOCKING_IO_READ_ERROR",
        "BLOCKING_IO_WRITE_ERROR", "BLOCKING_IO_LOOKUP_ERROR",
        # botocore: a waiter run for one attempt (``MaxAttempts=1``) raises it while the state is not reached
        "WaiterError",
    }
)

_FILTER_CALL = re.compile(r"(raise|retr|fatal|permanent|check|should|transient|recoverable|handle|is_|can_)", re.I)


@dataclass(frozen=True)
class Handler:
    node: cst.ExceptHandler
    names: Tuple[str, ...]
    catch_all: bool
    #: Only "not yet" exceptions: the loop polls, it does not retry a failure.
    polling: bool
    variable: Optional[str]


def describe_handler(handler: cst.ExceptHandler, ctx: ModuleContext) -> Handler:
    variable = None
    if handler.name is not None and isinstance(handler.name.name, cst.Name):
        variable = handler.name.name.value
    if handler.type is None:
        return Handler(handler, (), True, False, variable)
    names = exception_names(handler.type, ctx)
    catch_all = any(n in CATCH_ALL for n in names)
    polling = (
        bool(names) and all(_not_yet(n) for n in names) or _retries_only_on_errno(handler, ctx)
        or _waits_to_be_listed(handler, names, ctx)
        or bool(names) and all(_CONTROL_SIGNAL.search(n.rsplit(".", 1)[-1]) for n in names)
        or bool(names) and all(sent_elsewhere(n.rsplit(".", 1)[-1]) for n in names)
        or _checks_until_true(handler.type, names, ctx)
        or _waits_for_a_lock(handler, names, ctx)
        or not catch_all and _says_not_ready(handler)
        or _round_only_when_not_ready(handler)
        or _round_only_while_missing(handler, ctx)
    )
    return Handler(handler, names, catch_all, polling, variable)


#: Class names that say "not yet" (``RedactedAudioIncompleteError`` raised on HTTP 202,
#: ``AuthorizationPendingError``, ``JobNotReady``) or "no local capacity yet" (``BufferError``
#: from a producer's full local queue, a pool with no free connection): waiting for them is a
#: poll or back-pressure, not a retry of a failure. ``IncompleteRead`` (a truncated body) is a
#: transport failure and does not match.
_NOT_YET_WORDS = re.compile(
    r"(NotReady|NotYet|StillProcessing|StillRunning|InProgress|NotFinished|NotComplete|NotDone|Incomplete|Pending|"
    r"MaxConnectionsExceeded|PoolExhausted|PoolTimeout|BufferError)(Error|Exception)?$"
)


#: Exceptions used as control flow (yt-dlp's JavaScript interpreter raises ``JS_Continue`` for a
#: ``continue`` statement): catching one is no failure either.
_CONTROL_FLOW = re.compile(r"(^|_)(Continue|Break)(Loop|Iteration|Signal|Statement)?$")


def not_yet_name(last: str) -> bool:
    """The last part of an exception's name says "not yet" (shared with :mod:`.candidates`), or
    it is a control-flow signal rather than a failure."""
    return last in NOT_YET_NAMES or bool(_NOT_YET_WORDS.search(last)) and not last.startswith(
        "PendingRollback") or bool(_CONTROL_FLOW.search(last))


def _checks_until_true(expr: cst.BaseExpression, names: Tuple[str, ...], ctx: ModuleContext) -> bool:
    """``except AssertionError: sleep(0.1)`` (also as a parameter's default, pykafka's
    ``retry(assertion_callable, exception_to_retry=AssertionError)``): a failed check means
    "not true yet", an eventually-style poll of a test, not a retry of a failed operation."""
    if names and all(n == "AssertionError" for n in names):
        return True
    if isinstance(expr, cst.Name):
        bindings = ctx.bindings(expr)
        if len(bindings) == 1 and bindings[0].kind == "param" and bindings[0].value is not None:
            shipped = exception_names(bindings[0].value, ctx)
            return bool(shipped) and all(n == "AssertionError" for n in shipped)
    return False


#: "Someone else holds it": a lock, a locked file or database.
_LOCK_HELD = re.compile(r"(?i)(\bis_locked\b|\blocked\b|\block_(held|busy|taken)\b|database is locked)")
_LOCK_ERROR = re.compile(r"^(AlreadyLocked|Locked|LockHeld|LockTimeout|LockNotAcquired|DatabaseLocked)(Error|Exception)?$")


#: A lock taken without blocking, which fails at once while someone else holds it.
_NON_BLOCKING_LOCK = re.compile(r"\b(LOCK_NB|LK_NBLCK|LK_NBRLCK)\b|\bacquire\(\s*(blocking\s*=\s*)?False\b")


def _waits_for_a_lock(handler: cst.ExceptHandler, names: Tuple[str, ...], ctx: ModuleContext) -> bool:
    """quixstreams opening a RocksDB partition: ``is_locked = str(exc).startswith("io error");
    if not is_locked: raise`` and then ``sleep(backoff)``: only "another process holds the lock"
    goes round, a wait for the lock to be released, with no downstream to back off from."""
    if names and all(_LOCK_ERROR.match(n.rsplit(".", 1)[-1]) for n in names):
        return True
    if names and all(n.rsplit(".", 1)[-1] == "FileExistsError" for n in names):
        # ``os.mkdir(lock_dir)`` failing with FileExistsError: someone else holds the lock (or the
        # name is taken); only waiting for it to go, or another name, can help (langsmith's _dir_lock)
        return True
    attempt = ctx.parent(handler)
    if isinstance(attempt, cst.Try) and _NON_BLOCKING_LOCK.search(ctx.code(attempt.body)):
        # ``fcntl.flock(f, LOCK_EX | LOCK_NB)`` failing: another process holds the file lock
        # (eumdac's open_locked); going round is waiting for it, not resending to a service
        return True
    for node in walk_local(handler.body):
        if not isinstance(node, cst.If) or not _LOCK_HELD.search(ctx.code(node.test)):
            continue
        body, orelse = if_branches(node)
        negated = isinstance(node.test, cst.UnaryOperation) and isinstance(node.test.operator, cst.Not)
        if negated and outcomes(body) == frozenset({RAISE}):
            return True  # ``if not is_locked: raise``
        if not negated and orelse is not None and outcomes(orelse) == frozenset({RAISE}):
            return True  # ``if "database is locked" in str(e): sleep(…) else: raise``
    return False


#: What the handler tells its log when the failure means "not there yet": "Vector index not ready,
#: retrying in 5 seconds", "Cluster still has active operation", "Index is not ready for ingestion".
_NOT_READY_TEXT = re.compile(
    r"(?i)\b(not (yet )?ready|not yet (available|created|active|listed|visible|propagated)|"
    r"not (yet )?(finished|completed?|done) yet|not finished yet|"
    r"still (has )?(an? )?(active|pending|running|in progress|being (created|provisioned|deleted))|"
    r"(waiting|wait) for (it|the \w+|\w+) to (become|be) (ready|available|active|created))"
)
_LOG_CALL = re.compile(r"^(debug|info|warning|warn|log|print|echo)$", re.I)


def _says_not_ready(handler: cst.ExceptHandler) -> bool:
    """airflow's bedrock operator: ``except ClientError: if <a known message>: log.warning("Vector
    index not ready, retrying in %s seconds"); sleep(...)``: the author says the failure means
    the resource is not ready yet, a wait for a state rather than a resend to a failing service.
    Only for handlers that catch something chosen (a catch-all's log line proves nothing)."""
    said = False
    for node in walk_local(handler.body):
        if isinstance(node, cst.Call) and _LOG_CALL.match(last_name(node.func) or "") and node.args:
            first = node.args[0].value
            texts = [n.value for n in walk(first) if isinstance(n, (cst.SimpleString, cst.FormattedStringText))]
            said = said or any(_NOT_READY_TEXT.search(t) for t in texts)
        if isinstance(node, cst.Call) and last_name(node.func) == "sleep" and _grows(node):
            return False  # ``sleep(2 ** attempt)``: a wait written as a retry schedule is judged as one
    return said


def _round_only_when_not_ready(handler: cst.ExceptHandler) -> bool:
    """instagrapi's album upload: ``except Exception as e: if "Transcode not finished yet" in
    str(e): sleep(…); continue`` and ``raise e`` for anything else: only the server's "not done
    yet" answer goes round, a wait for its work to finish, even under a catch-all."""
    return _round_only_when(handler, lambda branch: any(
        _NOT_READY_TEXT.search(n.value) for n in walk(branch.test)
        if isinstance(n, (cst.SimpleString, cst.FormattedStringText))))


def _round_only_while_missing(handler: cst.ExceptHandler, ctx: ModuleContext) -> bool:
    """kr8s's ``get(..., timeout=2)``: ``except ServerError as e: if e.response.status_code == 404:
    continue`` and ``raise e`` for the rest: only "not there yet" goes round, a wait for the
    resource to appear (the statuses a loop retries say the same, see ``loops._statuses``)."""
    def missing(branch: cst.If) -> bool:
        tested = status_range(branch.test, ctx)
        return tested is not None and bool(tested[1]) and all(400 <= s < 500 and s not in (408, 429) for s in tested[1]) \
            and not outcomes(if_branches(branch)[0]) & frozenset({RAISE})
    return _round_only_when(handler, missing)


def _round_only_when(handler: cst.ExceptHandler, picks) -> bool:  # noqa: ANN001 - a predicate of an If
    """An ``if`` of the handler that ``picks`` lets its failures go on, and everything else the
    handler meets (its ``else``, or the statements after it) raises."""
    body = list(statements(handler.body))
    for k, statement in enumerate(body):
        if not isinstance(statement, cst.If) or not picks(statement):
            continue
        _, orelse = if_branches(statement)
        rest = orelse if orelse is not None else body[k + 1:]
        if rest and outcomes(rest) == frozenset({RAISE}):
            return True
    return False


_GROWING_NAME = re.compile(r"backoff|expo", re.I)


def _grows(sleep: cst.Call) -> bool:
    """``sleep(2 ** attempt)``, ``sleep(1 << n)``, ``sleep(self._backoff(n))``."""
    return any(isinstance(n, (cst.Power, cst.LeftShift)) or isinstance(n, (cst.Name, cst.Attribute))
               and bool(_GROWING_NAME.search(dotted_name(n) or "")) for n in walk(sleep))


def _not_yet(name: str) -> bool:
    return name in NOT_YET or not_yet_name(name.rsplit(".", 1)[-1])


_PORT_TAKEN = re.compile(r"\bEADDRINUSE\b")


#: Exceptions a program raises to steer itself, not failures: bottle's ``RouteReset`` (a plugin
#: changed the route: rebuild it), gallery-dl's ``RestartExtraction``, yt-dlp's ``ReExtractInfo``. ``ConnectionResetError``
#: (or a ``ConnectionReset``) and other ``…Error``/``…Exception`` names are failures and do not match.
_CONTROL_SIGNAL = re.compile(
    r"^(?!.*(Error|Exception|Failure|Fault)$)(?!.*(Connection|Peer|Socket|Stream))(.*(Reset|Restart|Reload|Rerun|Redo|Rewind)|Re[A-Z])"
)


#: The server says where, or when, to go instead (pyrogram's ``PhoneMigrate``, redis cluster's
#: ``MovedError``, a sandbox's ``ServerReloadError`` on a 1001 Going Away): an instruction, not a failure.
_SENT_ELSEWHERE = re.compile(r"(Migrate|Redirect|Moved|GoingAway|GoAway|ServerReload)\w*(Error|Exception)?$")


def sent_elsewhere(name: str) -> bool:
    return bool(_SENT_ELSEWHERE.search(name))


def _waits_to_be_listed(handler: cst.ExceptHandler, names: Tuple[str, ...], ctx: ModuleContext) -> bool:
    """``created = [n for n in self.list_nodes() if n.id == subid][0]`` with ``except IndexError:
    sleep(1)`` (libcloud's vultr driver): the attempt looks for a new resource in a listing and
    the IndexError says "not listed yet", so the loop polls for it to appear."""
    if not names or not all(n.rsplit(".", 1)[-1] in ("IndexError", "StopIteration") for n in names):
        return False
    attempt = ctx.parent(handler)
    if not isinstance(attempt, cst.Try):
        return False
    for node in walk(attempt.body):
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.ListComp) and node.value.for_in.ifs:
            return True  # [n for n in nodes if n.id == subid][0]
        if isinstance(node, cst.Call) and last_name(node.func) == "next" and node.args:
            first = node.args[0].value
            if isinstance(first, cst.GeneratorExp) and first.for_in.ifs:
                return True  # next(n for n in nodes if n.id == subid)
    return False


def _retries_only_on_errno(handler: cst.ExceptHandler, ctx: ModuleContext) -> bool:
    """``except OSError as e: if e.errno == errno.EINTR: continue; raise``: EINTR handling,
    also when a helper of the module tests the errno (``if not _is_eintr(e): raise``)."""
    for node in walk_local(handler.body):
        if isinstance(node, cst.If):
            if NOT_YET_ERRNO.search(ctx.code(node.test)):
                return True
            if _PORT_TAKEN.search(ctx.code(node.test)) and any(isinstance(n, cst.Raise) for n in walk_local(node)):
                # ``if port != 0 or e.errno != errno.EADDRINUSE: raise``: only a taken port goes
                # round, to bind another one (or wait for it to be released), not a failure.
                return True
            if any(isinstance(n, cst.Call) and ctx.summaries.tests_errno(ctx.helper_key(n)) for n in walk(node.test)):
                return True
    return False


def failure_names(handler: Handler, ctx: ModuleContext) -> Tuple[str, ...]:
    """The exception variable and the names the handler derives from it (``status = e.code``)."""
    if not handler.variable:
        return ()
    names = {handler.variable}
    for node in walk(handler.node.body, skip=DEFERRED):
        if isinstance(node, cst.Assign) and set(_names(node.value)) & names:
            for target in node.targets:
                name = dotted_name(target.target)
                if name:
                    names.add(name)
    return tuple(sorted(names))


def exception_names(expr: cst.BaseExpression, ctx: ModuleContext, depth: int = 0) -> Tuple[str, ...]:
    """Qualified names of the classes in ``except X`` / ``except (X, Y)`` / ``except ERRORS``."""
    if isinstance(expr, cst.Tuple):
        out: List[str] = []
        for element in expr.elements:
            out.extend(exception_names(element.value, ctx, depth))
        return tuple(out)
    # ``self.client.exceptions.X`` has no global name: libcst's ``f.<locals>.self.client…`` is
    # no name a reader knows, the source's spelling is.
    qualified = frozenset(q for q in ctx.qualified_names(expr) if "<locals>" not in q)
    if isinstance(expr, cst.Name) and depth < 3:
        bindings = [b for b in ctx.bindings(expr) if b.kind in ("assign", "annassign")]
        if len(bindings) == 1 and isinstance(bindings[0].value, (cst.Tuple, cst.List)):
            return exception_names(cst.Tuple(bindings[0].value.elements), ctx, depth + 1)  # type: ignore[union-attr]
        constant = ctx.module_constant(expr.value, expr)
        if constant is not None and isinstance(constant, (cst.Tuple, cst.List)):
            return exception_names(cst.Tuple(constant.elements), ctx, depth + 1)
    if qualified:
        return tuple(sorted(qualified))
    name = dotted_name(expr)
    return (name,) if name else ()


def filters_failure(handler: Handler, ctx: ModuleContext) -> bool:
    """Does the handler look at the exception and exit for some of them before retrying?

    ``if isinstance(e, Fatal): raise``, ``if e.response.status_code < 500: raise``,
    ``if not is_retryable(e): return``, ``self._raise_if_fatal(e)``, ``match e: …``.
    """
    variables = failure_names(handler, ctx)
    variable = handler.variable
    for node in walk(handler.node.body, skip=DEFERRED):
        if isinstance(node, (cst.If, cst.Match, cst.Call, cst.Assert)) and _in_give_up_branch(node, handler.node, ctx):
            continue  # ``if attempt == last: if isinstance(err, NotFound): raise …``: after giving up
        if isinstance(node, cst.If) and _looks_at_failure(node.test, variables, ctx):
            body, orelse = if_branches(node)
            if outcomes(body) & EXITS or (orelse is not None and outcomes(orelse) & EXITS) or orelse is None and _exits_after(node, handler, ctx):
                return True
            if _flags_an_exit_after_the_try(body, handler, ctx) or _spends_the_count_in_a_branch(node, handler):
                return True
        if isinstance(node, cst.Match) and variable and variable in _names(node.subject):
            return True
        if isinstance(node, cst.Call) and variable:
            name = last_name(node.func) or ""
            passes_failure = any(set(_names(arg.value)) & set(variables) for arg in node.args)
            # ``self.retry(exc=exc)`` (celery) is the retry itself, not a filter.
            if passes_failure and _FILTER_CALL.search(name) and name not in ("print", "format", "str", "repr", "retry"):
                return True
        if isinstance(node, cst.Assert) and variable and variable in _names(node.test):
            return True
    return False


def _spends_the_count_in_a_branch(chain: cst.If, handler: Handler) -> bool:
    """pyvmomi's ``InvokeAccessor``: ``if isinstance(e, SESSION): relogin`` ``elif isinstance(e,
    (ExpatError, socket.error)): sleep`` ``else: retriesLeft = 0``, then ``if retriesLeft > 0:
    continue`` and ``raise e``: the failures no branch picks spend the count and are raised."""
    spent = set()
    for node in walk(chain, skip=DEFERRED):
        if isinstance(node, cst.Assign) and (isinstance(node.value, cst.Integer) and node.value.value == "0"
                                             or isinstance(node.value, cst.Name) and node.value.value in ("False", "None")):
            spent.update(dotted_name(t.target) for t in node.targets)
    spent.discard(None)
    body = list(statements(handler.node.body))
    if not spent or chain not in body:
        return False
    rest = body[body.index(chain) + 1:]
    tests = any(isinstance(s, cst.If) and spent & set(_names(s.test)) for s in rest)
    return tests and RAISE in outcomes(rest)


def _flags_an_exit_after_the_try(body: Sequence[cst.CSTNode], handler: Handler, ctx: ModuleContext) -> bool:
    """gallery-dl's ytdl downloader: ``if cls.__module__ == "builtins": tries = False`` in the
    handler, then after the try ``if tries: log … else: return False``: the classification
    sets a flag that the statements right after the try exit on."""
    flags = set()
    for statement in body:
        for node in walk(statement, skip=DEFERRED):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in ("False", "None"):
                flags.update(dotted_name(t.target) for t in node.targets)
    flags.discard(None)
    attempt = ctx.parent(handler.node)
    block = ctx.parent(attempt) if isinstance(attempt, cst.Try) else None
    siblings = list(block.body) if isinstance(block, cst.IndentedBlock) else []
    if not flags or attempt not in siblings:
        return False
    for statement in siblings[siblings.index(attempt) + 1:]:
        if not isinstance(statement, cst.If):
            continue
        negated = isinstance(statement.test, cst.UnaryOperation) and isinstance(statement.test.operator, cst.Not)
        tested = dotted_name(statement.test.expression if negated else statement.test)
        if tested not in flags:
            continue
        taken, other = if_branches(statement)
        falsy_branch = taken if negated else other
        if falsy_branch is not None and outcomes(falsy_branch) & EXITS:
            return True
    return False


def _in_give_up_branch(node: cst.CSTNode, handler: cst.ExceptHandler, ctx: ModuleContext) -> bool:
    for ancestor in ctx.ancestors(node):
        if ancestor is handler:
            return False
        if isinstance(ancestor, cst.IndentedBlock) and isinstance(ctx.parent(ancestor), (cst.If, cst.Else)):
            result = outcomes(statements(ancestor))
            if result and result <= EXITS:
                return True
    return False


def _exits_after(node: cst.If, handler: Handler, ctx: ModuleContext) -> bool:
    """``if transient(e): sleep(); continue`` then ``raise``: the handler exits for the rest."""
    stmts = statements(handler.node.body)
    for index, statement in enumerate(stmts):
        if statement is node:
            return bool(outcomes(stmts[index + 1 :]) & EXITS) and not any(
                isinstance(s, cst.Continue) for s in stmts[index + 1 :]
            )
    return False


def _looks_at_failure(test: cst.BaseExpression, variables: Tuple[str, ...], ctx: ModuleContext) -> bool:
    names = _names(test)
    if any(n == v or n.startswith(v + ".") for n in names for v in variables):
        return True
    # A status test on a response captured before the failure.
    if status_set(test, ctx) is not None:
        return True
    # A look at the page that failed to parse: ``if "window._riskdata_" not in page: raise``
    # (gallery-dl's bilibili, only a risk-control page is waited out).
    return any(
        isinstance(node, cst.Comparison) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString))
        and any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in node.comparisons)
        for node in walk(test)
    )


def _names(node: cst.CSTNode) -> List[str]:
    out = []
    for n in walk(node):
        if isinstance(n, (cst.Name, cst.Attribute)):
            name = dotted_name(n)
            if name:
                out.append(name)
    return out


def status_raises(try_node: cst.Try, ctx: ModuleContext) -> Tuple[bool, bool]:
    """What a failed HTTP status raises in the attempt: (an HTTP error, from ``raise_for_status()``
    called there or in a helper of this module that calls it; an error of the package's own, from a
    helper that raises for a status that is not a success, ``if r.status_code != 200: raise
    ApiError(r)``)."""
    http_error = own_error = False
    handled = _handler_names(try_node)
    for node in walk_local(try_node.body):
        if not isinstance(node, cst.Call):
            continue
        if last_name(node.func) == "raise_for_status":
            http_error = http_error or not _gives_up_first(node, handled, ctx)
            continue
        key = ctx.helper_key(node)
        if key in ctx.summaries:
            kind = ctx.summaries.status_raise_kind(key)
        else:
            kind = _status_raise_elsewhere(node, ctx)
        http_error = http_error or kind == "http"
        own_error = own_error or kind == "own"
    return http_error, own_error


def _status_raise_elsewhere(call: cst.Call, ctx: ModuleContext) -> Optional[str]:
    """What a function of another module of the checked tree, or a method of a base class,
    raises for a failed status (noted for ``explain``)."""
    callee = ctx.program_callee(call)
    raised = ctx.program.status_raiser(*callee) if callee is not None else None
    if raised is None:
        return None
    kind, where = raised
    ctx.outside_values.append((call, where))
    return kind


def _handler_names(try_node: cst.Try) -> set:
    """The names the handlers of ``try_node`` read or write."""
    return {n.value for h in try_node.handlers for n in walk(h.body) if isinstance(n, cst.Name)}


def taken_earlier(earlier: Sequence[Handler], raises_for_status: bool, raises_own_status_error: bool) -> bool:
    """An earlier ``except HTTPError`` takes the status errors: a later catch-all never sees them."""
    return any(not h.catch_all and is_http_status_error(h, raises_for_status, raises_own_status_error)
               for h in earlier)


def _gives_up_first(call: cst.Call, handled: set, ctx: ModuleContext) -> bool:
    """``if resp.status_code > 400: retries = self.max_retries - 1; resp.raise_for_status()``: the
    branch sets what the handler tests to give up (geonode's thumbnails) before it raises."""
    statement = ctx.statement_of(call)
    if isinstance(ctx.parent(statement), cst.SimpleStatementLine):
        statement = ctx.parent(statement)
    block = ctx.parent(statement)
    if not isinstance(block, cst.IndentedBlock) or not isinstance(ctx.parent(block), cst.If):
        return False
    return _assigns_before(block, statement, handled)


def _assigns_before(block: cst.IndentedBlock, statement: cst.CSTNode, names: set) -> bool:
    for earlier in block.body:
        if earlier is statement:
            break
        for small in earlier.body if isinstance(earlier, cst.SimpleStatementLine) else ():
            targets = small.targets if isinstance(small, cst.Assign) else [small] if isinstance(
                small, cst.AugAssign) else []
            if any(isinstance(t.target, cst.Name) and t.target.value in names for t in targets):
                return True
    return False


def forces_give_up(branch: cst.If, try_node: cst.Try) -> bool:
    """A branch of the attempt that spends the attempts and then raises (``retries =
    max_retries - 1; resp.raise_for_status()``): what it tests is given up at once, through the
    handler's own give-up. A permanent-error exit, and its statuses are not retried."""
    if not isinstance(branch.body, cst.IndentedBlock):
        return False
    handled = _handler_names(try_node)
    for statement in branch.body.body:
        raising = [n for n in walk(statement) if isinstance(n, cst.Raise)
                   or isinstance(n, cst.Call) and last_name(n.func) == "raise_for_status"]
        if raising:
            return _assigns_before(branch.body, statement, handled)
    return False


def is_http_status_error(handler: Handler, raises_for_status: bool, raises_own_status_error: bool = False) -> bool:
    names = set(handler.names)
    if names & HTTP_STATUS_EXCEPTIONS:
        return True
    if handler.catch_all:
        # ``except Exception`` around ``raise_for_status()`` retries every 4xx as well (and is RTY301 too)
        return raises_for_status or raises_own_status_error
    return raises_for_status and bool(names & HTTP_ERROR_BASES)


def retried_error(
    handler: Handler,
    ctx: ModuleContext,
    permanent_exit_before: bool,
    raises_for_status: bool,
    raises_own_status_error: bool = False,
) -> RetriedError:
    filtered = filters_failure(handler, ctx)
    node = handler.node
    if node.type is not None:
        location = ctx.location(node, end=node.type)
    else:
        start = ctx.location(node)
        location = Location(start.line, start.column, start.line, start.column + len("except"))
    return RetriedError(
        kind=CatchKind.CATCH_ALL if handler.catch_all else CatchKind.NAMED,
        names=handler.names,
        permanent_exit_before=permanent_exit_before or filtered,
        checks_status=filtered,
        raises_http_status=is_http_status_error(handler, raises_for_status, raises_own_status_error),
        location=location,
        text="except" + (" " + ctx.code(node.type) if node.type is not None else ""),
    )


#: ``catcher_of``: no handler catches the error; it leaves the try.
LEAVES = -1


def catcher_of(error: str, caught: Sequence[Tuple[str, ...]], ctx: ModuleContext, where=None) -> Optional[int]:
    """Which of the handlers (each given by the class names it catches, in order; an empty tuple
    for a bare ``except``) catches an error of class ``error`` (as the program view names it):
    its index, :data:`LEAVES` when none does, None when we cannot tell (a base class that is not
    readable, a handler naming a library's class). ``where``: the module facts ``error`` is
    written in (another module's function), else this module."""
    chain = ctx.program.exception_bases(error, where)
    last = error.rsplit(".", 1)[-1]
    for index, names in enumerate(caught):
        lasts = {n.rsplit(".", 1)[-1] for n in names}
        if not names or lasts & CATCH_ALL or last in lasts:
            return index
        if chain is None:
            return None  # ``except ClientError`` may be a base of an error whose bases we cannot read
        if lasts & set(chain):
            return index
        builtin = BUILTIN_EXCEPTIONS.get(chain[-1])
        for name in lasts:
            other = BUILTIN_EXCEPTIONS.get(name)
            if other is not None and builtin is not None and issubclass(builtin, other):
                return index
    return LEAVES

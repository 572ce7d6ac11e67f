"""Is the next pass the same operation on the same input? Retry, or search and repair.

A loop goes round after a failure for many reasons. It is a *retry* only when the next
pass repeats the same operation on the same input: what failed is expected to succeed
later, unchanged. When the failure path changes what is sent or where (the next port,
the next candidate name, the redirect target, a shorter payload, the parent frame, a
state machine's next state) the loop searches or repairs; going round immediately and
without a bound is then what it should do.

The question is asked of the failure path (an ``except`` handler that goes round, and
what runs after it before the loop head; a branch that goes round on an HTTP status):
does it assign or mutate a name the attempt reads? The attempt's reads are the
operation's arguments, the values they are computed from earlier in the iteration, and
the tests of the ``if`` statements that choose the operation. Excepted, because the next
pass still repeats the same request:

* counters and timing (``attempt += 1``, ``delay *= 2``, ``timeout=...`` arguments);
* a fresh connection or client as the operation's receiver (``self.conn = connect()``),
  unless it is taken from a list of alternatives (``next(hosts)``, ``servers[i]``).

A handler that creates what was missing (``os.makedirs``, ``create_table``) repairs the
cause; the recursion extractor applies the same test to functions calling themselves.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Set

import libcst as cst

from ..syntax import DEFERRED, dotted_name, last_name, statement_calls, unwrap_await, walk
from .context import Binding, ModuleContext
from .flow import in_handler

#: Calls that create what was missing; after one, running again meets a different state.
CREATES = re.compile(
    r"^_*(create|make|mkdir|makedirs|ensure|init|initiali[sz]e|setup|set_up|install|provision|bootstrap)(_|$)",
    re.IGNORECASE,
)
#: Words of names whose change does not change the request: counters, clocks, delays, errors.
_BOOKKEEPING = re.compile(
    r"^(attempts?\w*|retr(y|ies|ied|ying|ys)\w*|tries|try|tried|backoff|delays?|sleep\w*|waits?|interval|timeouts?|"
    r"deadline|elapsed|err\w*|exc|excs|exceptions?|fail\w*|last|jitter|cooldown|iterations?|rounds?)$",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def bookkeeping(name: str) -> bool:
    """``attempt``, ``self._retry_count``, ``lastError``, ``backoff_s``: a name that counts or times."""
    last = name.rsplit(".", 1)[-1]
    return any(_BOOKKEEPING.match(word) for word in _WORDS.findall(last))


#: Calls that record a value, not send it: ``log.debug(...)``, ``print(...)``, ``warnings.warn(...)``.
_LOGS = re.compile(r"^(print|\w*(log|logger|logging|LOG|LOGGER)\.\w+|warnings\.warn|self\.(log|logger|_log|_logger)\.\w+)$")
#: Keyword arguments that tune an attempt without changing what it asks for.
_TUNING_KEYWORDS = re.compile(r"(timeout|attempt|retr|tries|deadline|wait|backoff|delay)", re.I)
#: Methods that put something new into a container (``del``, ``pop`` and ``clear`` only drop a
#: cached handle, so the next pass makes the same request afresh).
MUTATORS = frozenset(
    {
        "append", "appendleft", "extend", "extendleft", "insert", "add", "update", "setdefault", "rotate",
    }
)
#: A receiver taken from alternatives: ``next(hosts)``, ``self._pick_server()``, ``urls[i]``.
_ALTERNATIVE_CALL = re.compile(
    r"^_*((get|use|try|load|take)_?)?(next|rotate|fail_?over|fallback|alternat\w*|other|switch|select|pick|choose|choice|cycle)(_|$)",
    re.I,
)


def _names(node: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(node, skip=DEFERRED) if isinstance(n, (cst.Name, cst.Attribute))]


def _matches(changed: str, read: Iterable[str]) -> bool:
    """``self.index`` changes ``self.index`` and ``self.index.host``, not ``self``."""
    return any(r == changed or r.startswith(changed + ".") for r in read)


class AttemptReads:
    """What one attempt of a loop reads: the operation's inputs and the tests that chose it.

    ``inputs``: the operation's arguments (tuning keywords aside) and the tests of the ifs
    in the loop that choose it; ``receivers``: the object it is called on. Each with the
    values it is computed from earlier in the iteration.
    """

    def __init__(self, operation: cst.Call, loop: cst.CSTNode, ctx: ModuleContext,
                 writes: Dict[str, List[Binding]], failure_regions: Sequence[cst.CSTNode],
                 attempt: Optional[cst.CSTNode] = None) -> None:
        self.ctx = ctx
        self.loop = loop
        self._writes = writes
        self._failure_regions = failure_regions
        func = operation.func
        receivers = set(_names(func.value)) if isinstance(func, cst.Attribute) else set()
        if isinstance(func, cst.Call):
            receivers = set(_names(func))  # ``getattr(client, method_name)(*args)``: called on ``client``
        inputs: Set[str] = set()
        # The operation's arguments, and those of the attempt's calls made for their effect:
        # ``sock = socket.socket()`` is named the operation, but ``sock.bind(("", port))`` is what
        # the next port changes. Calls whose value is kept feed the operation through the values
        # read below; logging reads values without sending them.
        calls = [operation] + ([n for n in _effect_calls(attempt) if not _LOGS.match(dotted_name(n.func) or "")]
                               if attempt is not None else [])
        for call in calls:
            for arg in call.args:
                if arg.keyword is not None and _TUNING_KEYWORDS.search(arg.keyword.value):
                    continue
                inputs.update(_names(arg.value))
        for ancestor in ctx.ancestors(operation):
            if ancestor is loop:
                break
            if isinstance(ancestor, cst.If) and not ctx.is_inside(operation, ancestor.test):
                inputs.update(_names(ancestor.test))
        self.inputs = self._closure(inputs) - {""}
        self.receivers = self._closure(receivers) - {""}

    def reads(self, name: str) -> bool:
        """Does the attempt read ``name`` (as an input, or as what it is called on)?"""
        return _matches(name, self.inputs | self.receivers)

    def derived_from(self, value: cst.BaseExpression) -> List[str]:
        """The names a value reads, through the loop's locals one step back
        (``parent = current.parent; current = parent`` steps from ``current``)."""
        names = _names(value)
        for name in list(names):
            for binding in self._writes.get(name, ()):
                if binding.value is not None:
                    names.extend(_names(binding.value))
        return names

    def _closure(self, names: Set[str]) -> Set[str]:
        seen = set(names)
        todo = list(names)
        while todo:
            name = todo.pop()
            for binding in self._writes.get(name, ()):
                if binding.value is None or any(self.ctx.is_inside(binding.node, r) for r in self._failure_regions):
                    continue
                for read in _names(binding.value):
                    if read not in seen:
                        seen.add(read)
                        todo.append(read)
        return seen


#: Calls that take a host or connection out of rotation: ``self.mark_dead(connection)``.
_MARKS_DEAD = re.compile(
    r"^_*(mark_?(as_?)?(dead|down|failed|bad|unhealthy|unavailable)|blacklist|ban|quarantine|evict|"
    r"(drop|remove|discard|retire|disable)_(server|host|node|endpoint|connection|backend|peer|url|replica)s?$)", re.I)


def marks_receiver_dead(regions: Sequence[cst.CSTNode], reads: "AttemptReads") -> bool:
    """The failure path takes what the operation was called on out of rotation
    (opensearch-py: ``self.mark_dead(connection)``, then ``connection = self.get_connection()``
    on the next pass): the next attempt goes to another host, a failover."""
    for region in regions:
        for node in walk(region, skip=DEFERRED):
            if isinstance(node, cst.Call) and _MARKS_DEAD.match(last_name(node.func) or ""):
                if any(_matches(n, reads.receivers) for arg in node.args for n in _names(arg.value) if n):
                    return True
            # ``except Empty: self.pop(key)`` where the attempt was ``self[key].take()``
            # (celery's LRU buffers): the failed candidate leaves the pool, the next pass takes
            # another one. Removing a request's own input (``inflight.pop(request_id)``) is not it.
            removed = _removed_keys(node)
            if removed and all(_matches(n, reads.receivers) and not _matches(n, reads.inputs)
                               and n not in ("self", "cls") for n in removed):
                return True
    return False


def _removed_keys(node: cst.CSTNode) -> List[str]:
    """The names ``pool.pop(key)`` / ``pool.remove(key)`` / ``del pool[key]`` take out."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in ("pop", "remove", "discard") and len(node.args) == 1:
        return [n for n in _names(node.args[0].value) if n]
    if isinstance(node, cst.Del) and isinstance(node.target, cst.Subscript):
        return [n for e in node.target.slice if isinstance(e.slice, cst.Index) for n in _names(e.slice.value) if n]
    return []


def _effect_calls(attempt: cst.CSTNode) -> List[cst.Call]:
    """``sock.bind(addr)`` / ``await conn.send(msg)`` as statements of the attempt."""
    found = []
    for node in walk(attempt, skip=DEFERRED):
        if isinstance(node, cst.Expr):
            value = unwrap_await(node.value)
            if isinstance(value, cst.Call):
                found.append(value)
    return found


def changed_on_path(regions: Sequence[cst.CSTNode], reads: AttemptReads,
                    after_line: Optional[int] = None) -> Optional[str]:
    """The first name the failure path changes that the attempt reads; None when it changes none.
    ``after_line``: the path starts there (a status loop's path holds the attempt itself, whose
    ``req = build_request(...)`` before the call makes the request, not a change of it)."""
    ctx = reads.ctx
    for region in regions:
        for node in walk(region, skip=DEFERRED):
            if after_line is not None and isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)) \
                    and ctx.location(node).line < after_line:
                continue
            if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                for name, bindings in ctx.writes_in(node).items():
                    if _changes_input(name, bindings, reads):
                        return name
                for target in _subscript_targets(node):
                    if _matches(target, reads.inputs | reads.receivers) and not bookkeeping(target):
                        return target
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                if dotted_name(node.func.value) in ("self", "cls") and _calls_alternative(node) \
                        and node.func.attr.value not in ("pop", "popleft"):
                    # ``if not self._get_next_app_info(): raise`` (yt-dlp's TikTok): the object moves
                    # on to its next alternative, and the next pass sends with it
                    return dotted_name(node.func)
                if node.func.attr.value in MUTATORS or _consumes(node):
                    owner = dotted_name(node.func.value)
                    if owner and _matches(owner, reads.inputs | reads.receivers) and not bookkeeping(owner):
                        return owner
    return None


def _consumes(call: cst.Call) -> bool:
    """``bits.pop()``, ``queue.popleft()``, ``items.pop(0)``: the list moves on (``cache.pop(key)`` drops a handle)."""
    name = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
    if name == "popleft":
        return True
    return name == "pop" and (not call.args or isinstance(call.args[0].value, cst.Integer))


def _subscript_targets(node: cst.CSTNode) -> List[str]:
    """``cache[key] = v`` changes ``cache``."""
    targets: List[cst.BaseExpression] = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        targets = [node.target]
    out = []
    for target in targets:
        if isinstance(target, cst.Subscript):
            name = dotted_name(target.value)
            if name:
                out.append(name)
    return out


#: The failure itself: when it flows into the next request, the code repairs from feedback
#: (``fixed = fix_chain.invoke({"error": err})``), it does not repeat the request.
_FAILURE_WORDS = re.compile(r"^_*(last_?)?(err|error|exc|exception|failure)s?$", re.I)


#: What a failure path drops so that the next pass connects afresh (``self.http_conn = None``).
_CONNECTION_NAME = re.compile(r"(^|_)(conn|connection|session|client|sock|socket|channel|transport|pool)s?$", re.I)


def _changes_input(name: str, bindings: Sequence[Binding], reads: AttemptReads) -> bool:
    if bookkeeping(name) and not (_FAILURE_WORDS.match(name.rsplit(".", 1)[-1]) and _matches(name, reads.inputs)):
        return False
    if bindings and _CONNECTION_NAME.search(name.rsplit(".", 1)[-1]) and all(
            isinstance(b.value, cst.Name) and b.value.value == "None" for b in bindings):
        return False  # swiftclient's ``self.http_conn = None``: reconnect, then the same request
    if bindings and _back_to_the_start(name, bindings, reads):
        return False
    if _matches(name, reads.inputs):
        return True
    # A new connection or client for the same request is a reconnect, unless it is the
    # next of several alternatives or a step from the old one (``frame = frame.f_back``).
    return _matches(name, reads.receivers) and any(
        _takes_alternative(b.value) or _matches(name, reads.derived_from(b.value)) or b.kind == "augassign"
        for b in bindings if b.value is not None
    )


def _back_to_the_start(name: str, bindings: Sequence[Binding], reads: AttemptReads) -> bool:
    """``attempt_messages = messages`` on the failure path, as before the loop (dashscope's
    ``chat_stream``: a transient failure resends the original messages, the empty-reply path
    adds a hint): the input set back to where it started is the same input again."""
    ctx = reads.ctx
    loop_line = ctx.location(reads.loop).line
    function = ctx.enclosing_function(reads.loop)
    if function is None:
        return False
    before = [b for b in ctx.writes_in(function.body).get(name, [])
              if b.value is not None and ctx.location(b.node).line < loop_line]
    if len(before) != 1:
        return False
    start = ctx.code(before[0].value)
    # ``page += 1`` holds the step, not the new value: never back to the start
    return all(b.kind != "augassign" and b.value is not None and ctx.code(b.value) == start for b in bindings)


def _takes_alternative(value: cst.BaseExpression) -> bool:
    value = unwrap_await(value)
    for node in walk(value, skip=DEFERRED):
        if isinstance(node, cst.Subscript) or isinstance(node, cst.Call) and _calls_alternative(node):
            return True
    return False


#: A call that hands out a free port (weaviate's ``_hold_port(held)``, ``find_free_port()``):
#: the OS offers another one on each call.
_FREE_PORT_CALL = re.compile(
    r"^_*(find|pick|hold|reserve|allocate|choose|grab|bind|acquire|get_free|get_unused|get_open|get_available|free|"
    r"unused|open|available|random)_(\w+_)?ports?$",
    re.I,
)


#: A call named for a fresh random value: s3cmd's ``prefix + rndstr(8)``, ``random_name()``, ``uuid4()``.
_RANDOM_CALL = re.compile(r"^_*(rnd|rand|random|uuid\d?|gen_?uuid|unique_?(id|name|suffix)|(tmp|temp)_?name|mktemp)(_|$|str|int|hex)", re.I)


def _calls_alternative(call: cst.Call) -> bool:
    """``next(hosts)``, ``self._pick_server()``, ``candidates.pop()``: the next of several."""
    name = last_name(call.func) or ""
    return bool(_ALTERNATIVE_CALL.match(name) or _FREE_PORT_CALL.match(name)) or name in ("pop", "popleft")


def fails_over(regions: Sequence[cst.CSTNode]) -> bool:
    """The failure path takes the next of several and sets it up: tarantool's mesh connection,
    ``addr = self.strategy.getnext(); update_connection(self, addr)``. A fallback over
    alternatives, not the same request again (the pass that follows goes elsewhere)."""
    for region in regions:
        for node in walk(region, skip=DEFERRED):
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                value = unwrap_await(node.value)
                if not (isinstance(value, cst.Call) and _ALTERNATIVE_CALL.match(last_name(value.func) or "")
                        and last_name(value.func) not in ("select", "choice", "other")):
                    continue
                names = [n for n in _assigned_names(node) if not bookkeeping(n)]
                # ``delay = next(delays)`` / ``tts = next(intervals)`` then ``sleep(tts)``: a schedule
                if names and not any(_slept(n, region) for n in names):
                    return True
    return False


def _assigned_names(node: "cst.Assign | cst.AnnAssign") -> List[str]:
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    return [n for n in (dotted_name(t) for t in targets) if n]


def _slept(name: str, region: cst.CSTNode) -> bool:
    return any(isinstance(c, cst.Call) and (last_name(c.func) or "") in ("sleep", "wait", "wait_for")
               and name in _names(c) for c in walk(region, skip=DEFERRED))


def _steps_from(name: str, node: cst.Assign, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``path = path.parent``, or through a local of the same pass: ``parent = os.path.dirname(path)``
    then ``path = parent`` (comet's walk up to the repository root)."""
    read = _names(node.value)
    if _matches(name, read):
        return True
    line = ctx.location(node).line
    for other in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if not isinstance(other, cst.Assign) or other is node or ctx.location(other).line >= line:
            continue
        if any(w in read and w != name for w in ctx.writes_in(other)) and _matches(name, _names(other.value)):
            return True
    return False


#: A call named for repairing: ``self.gremlin_fix_chain.invoke(...)``, ``self._repair(doc)``.
_REPAIR_WORDS = frozenset({"fix", "fixer", "repair", "heal"})


def asks_for_a_repair(attempt: cst.CSTNode, ctx: ModuleContext) -> bool:
    """The attempt first asks something to repair the input (an LLM "fix chain" rewriting a
    query that failed): each pass sends what the repair made, not the same input again."""
    for node in walk(attempt, skip=DEFERRED):
        if isinstance(node, cst.Call):
            name = dotted_name(node.func) or ""
            if any(word.lower() in _REPAIR_WORDS for part in name.split(".") for word in _WORDS.findall(part)):
                return True
    return False


#: Calls that renew what authenticates the request: after one, the next pass sends other
#: credentials (``self._refresh_session()``, ``dpop_generator.set_nonce(nonce)``); a repair.
RENEWS = re.compile(
    r"^_*(re_?auth\w*|re_?login|re_?authenticate|refresh(_\w*)?|renew(_\w*)?|login|authenticate|sign_?in|"
    r"set_nonce|update_(token|credentials?|nonce)|rotate_(token|credentials?))$",
    re.IGNORECASE,
)


#: What holds the request's credentials: setting one switches to other credentials
#: (``self.api_key = params["api_key"] = consumer_key``); a repair, not a resend.
CREDENTIAL_HOLDERS = re.compile(
    r"^_*(api_?key|(access_|auth_|bearer_|session_)?token|auth|authorization|credentials?|password|"
    r"secret|cookies?)$",
    re.IGNORECASE,
)


def renews_credentials(region: cst.CSTNode, before_line: Optional[int], ctx: ModuleContext) -> bool:
    """The failure path renews the request's credentials (before ``before_line``)."""
    for node in walk(region, skip=DEFERRED):
        renews = isinstance(node, cst.Call) and bool(RENEWS.match(last_name(node.func) or "")) or isinstance(
            node, cst.Assign) and any(_holds_credentials(t.target) for t in node.targets)
        if renews and (before_line is None or ctx.location(node).line < before_line):
            return True
    return False


def _holds_credentials(target: cst.BaseExpression) -> bool:
    """``self.api_key``, ``params["api_key"]``, ``headers["Authorization"]``."""
    if isinstance(target, cst.Attribute):
        return bool(CREDENTIAL_HOLDERS.match(target.attr.value))
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        index = getattr(target.slice[0].slice, "value", None)
        if isinstance(index, cst.SimpleString):
            return bool(CREDENTIAL_HOLDERS.match(index.value.strip("\"'").replace("-", "_")))
        if isinstance(index, cst.Name):
            # ``headers[_AUTHORIZATION_HEADER] = await self._token.acquire(self)`` (hikari)
            return bool(CREDENTIAL_HOLDERS.match(re.sub(r"_?(HEADER|KEY|NAME)$", "", index.value, flags=re.I)))
    return False


def creates_missing(region: cst.CSTNode, before_line: Optional[int], ctx: ModuleContext) -> bool:
    """The failure path calls ``create_table(...)``/``os.makedirs(...)`` (before ``before_line``)."""
    for call in statement_calls(region):  # a step of the path, not ``raise make_error(e)``
        if CREATES.match(last_name(call.func) or ""):
            if before_line is None or ctx.location(call).line < before_line:
                return True
    return False


#: Exceptions that say something is missing: after one, the failure path fills it in (a
#: cache, a registry, a file) or waits for it to appear; neither is a retry of a failure.
_LOOKUP = re.compile(r"(^|\.)(KeyError|IndexError|LookupError|AttributeError|FileNotFoundError|\w*DoesNotExist|\w*NotFound\w*)$")
#: Calls on the failure path that do not fill anything in.
_PASSIVE = re.compile(r"(sleep|wait|log|debug|info|warn|error|exception|print|metric|incr|record|emit|report|format|str|repr|len)", re.I)


def populates_missing(handler, regions: Sequence[cst.CSTNode], ctx: ModuleContext) -> bool:
    """``except KeyError: Registry(model)`` then look up again: the handler creates what was missing.

    The handler catches only "something is missing" errors and its way back calls something
    that is not a wait, a log or a metric.
    """
    if not handler.names or not all(_LOOKUP.search(n) for n in handler.names):
        return False
    return any(
        not _PASSIVE.search(last_name(call.func) or "") for region in regions for call in statement_calls(region)
    )


#: Calls whose value is new on every pass: the next host, a fresh random id or free port.
_FRESH_MODULES = ("random.", "secrets.", "uuid.")


def _fresh_earlier(name: str, node: cst.CSTNode, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``options = model_copy(input_options)`` earlier in the same pass: ``options =
    self._prepare(options)`` then works on a fresh copy each time; it does not step."""
    line = ctx.location(node).line
    for other in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if other is node or not isinstance(other, cst.Assign) or ctx.location(other).line >= line:
            continue
        if name in ctx.writes_in(other) and not _matches(name, _names(other.value)) and not in_handler(other, loop, ctx):
            return True
    return False


#: What a failure says about itself (read to decide, not to change the request).
_DESCRIBES_FAILURE = re.compile(r"^(status\w*|code|errno|message|msg|args|reason|response|details?|text|body)$", re.I)


#: Calls that change what the next attempt speaks: a protocol downgrade, a renegotiation.
_NEGOTIATES = re.compile(r"(downgrade|negotiat|degrade)", re.I)
#: What a rate-limit failure says about pacing (handed to a limiter, it changes no request).
_PACING = re.compile(r"^(headers?|reset\w*|limits?|remaining|quota\w*|seconds|wait\w*|period)$", re.I)


def told_by_failure(variable: Optional[str], regions: Sequence[cst.CSTNode], reads: "AttemptReads") -> Optional[str]:
    """The failure path stores what the failure said to do differently before going round
    (``self.client.protocol_context.version = e.expected_version``, ``self.salt =
    e.new_salt``): the next pass sends another request, a negotiation or repair. Counters,
    delays (``e.retry_after``) and what describes the failure (``e.status``) do not count.
    Returns the name it stores."""
    if not variable:
        return None
    for region in regions:
        for node in walk(region, skip=DEFERRED):
            if not isinstance(node, (cst.Assign, cst.AnnAssign)) or node.value is None:
                continue
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                name = dotted_name(target)
                if not name or bookkeeping(name) or "." not in name and not reads.reads(name):
                    continue  # a local to decide with (``code = exc.orig.pgcode``) changes nothing sent
                for read in walk(node.value, skip=DEFERRED):
                    said = _said_by(read, variable)
                    if said and not any(bookkeeping(part) or _DESCRIBES_FAILURE.match(part) for part in said):
                        return name
        for statement in walk(region, skip=DEFERRED):
            # pyrogram's ``except FilePartMissing as e: await self.save_file(path, file_part=e.value)``:
            # the failure names what is missing and the handler supplies it before sending again (a
            # call made for its effect; ``check = checks.get(e.__class__)`` only looks something up)
            if not isinstance(statement, cst.Expr) or not isinstance(unwrap_await(statement.value), cst.Call):
                continue
            call = unwrap_await(statement.value)
            callee = last_name(call.func) or ""
            if _NEGOTIATES.search(callee):
                return callee  # cassandra's ``self._cluster.protocol_downgrade(endpoint, version)``
            if _REPORTING.match(callee) or callee in ("sleep", "wait_for"):
                continue
            for arg in call.args:
                if arg.keyword is not None and _TUNING_KEYWORDS.search(arg.keyword.value):
                    continue
                for read in walk(arg.value, skip=DEFERRED):
                    said = _said_by(read, variable)
                    if said and not any(part.startswith("_") or bookkeeping(part) or _DESCRIBES_FAILURE.match(part)
                                        or _PACING.match(part) for part in said):
                        return callee
    return None


def _said_by(read: cst.CSTNode, variable: str) -> Optional[List[str]]:
    """``e.value.part`` → ``["value", "part"]``: what a read takes from the failure ``variable``."""
    text = dotted_name(read) if isinstance(read, cst.Attribute) else None
    if not text or not text.startswith(variable + "."):
        return None
    return text[len(variable) + 1:].split(".")


def alternative_input(reads: AttemptReads, operation: cst.Call, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """An input of the attempt is taken afresh on each pass, before the operation:
    ``resource = self._next()``, ``host = random.choice(hosts)``, ``public_id = secrets.token_hex()``."""
    line = ctx.location(operation).line
    for node in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if isinstance(node, cst.AugAssign) and ctx.location(node).line < line and not in_handler(node, loop, ctx):
            target = dotted_name(node.target)
            if target and reads.reads(target) and not bookkeeping(target):
                return True  # ``month += self.months`` before each attempt: the loop walks
        if not isinstance(node, (cst.Assign, cst.AnnAssign)) or node.value is None:
            continue
        if ctx.location(node).line >= line or in_handler(node, loop, ctx):
            continue
        names = ctx.writes_in(node)
        if not any(reads.reads(n) and not bookkeeping(n) for n in names):
            continue
        if isinstance(node, cst.Assign) and any(
            _steps_from(n, node, loop, ctx) and not _fresh_earlier(n, node, loop, ctx) for n in names if not bookkeeping(n)
        ):
            return True  # ``cursor = cursor.next_page``: each pass steps from the last
        for call in walk(node.value, skip=DEFERRED):
            if isinstance(call, cst.Call):
                if _calls_alternative(call) or _RANDOM_CALL.match(last_name(call.func) or "") \
                        or any(q.startswith(_FRESH_MODULES) for q in ctx.call_name(call)):
                    return True
    return False


#: Calls that report or time a pass rather than prepare it (``log.info("try %d", i)``).
_REPORTING = re.compile(
    r"^_*(print|echo|debug|info|warn|warning|error|exception|critical|log\w*|trace|emit|record\w*|report\w*|"
    r"notify\w*|sleep|wait\w*|set_attribute|add_event|inc\w*|observe|write|format|str|repr|len)$",
    re.IGNORECASE,
)


def positioned_by_item(loop: cst.CSTNode, operation: cst.Call, ctx: ModuleContext) -> bool:
    """A ``for`` pass hands its item to a call that prepares the attempt before it runs
    (``self._f.seek(offset + size * index)`` then ``self._read(fmt)``: pip's ELF header walk):
    each pass reads somewhere else, a walk and not a retry. Calls that only report the pass
    (logging, printing, sleeping) prepare nothing."""
    if not isinstance(loop, cst.For):
        return False
    items = {n for n in _names(loop.target) if n and not bookkeeping(n) and n != "_"}
    if not items:
        return False
    line = ctx.location(operation).line
    for node in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if not isinstance(node, cst.Expr) or ctx.location(node).line >= line:
            continue  # a call made for its effect (``seek``); a value it returns is an input, read as one
        node = unwrap_await(node.value)  # type: ignore[assignment]
        if not isinstance(node, cst.Call) or node is operation:
            continue
        if in_handler(node, loop, ctx) or _REPORTING.match(last_name(node.func) or ""):
            continue
        for arg in node.args:
            if arg.keyword is not None and _TUNING_KEYWORDS.search(arg.keyword.value):
                continue
            if items & set(_names(arg.value)):
                return True
    return False


def records_each_failure(variable: Optional[str], regions: Sequence[cst.CSTNode]) -> bool:
    """``if ie.name in missing_modules: raise`` then ``missing_modules += (ie.name,)`` (dlt's
    import discovery): the path remembers what each failure named and gives up on one it has
    seen, so no failure is ever met twice; each pass handles a new one (a discovery or a
    repair), it does not repeat a failed operation."""
    if not variable:
        return False
    prefix = variable + "."
    guarded: set = set()
    recorded: set = set()
    for region in regions:
        for node in walk(region, skip=DEFERRED):
            if isinstance(node, cst.If) and isinstance(node.test, cst.Comparison) \
                    and len(node.test.comparisons) == 1 and isinstance(node.test.comparisons[0].operator, cst.In) \
                    and (dotted_name(node.test.left) or "").startswith(prefix) \
                    and any(isinstance(s, cst.Raise) for line in getattr(node.body, "body", ())
                            if isinstance(line, cst.SimpleStatementLine) for s in line.body):
                seen = dotted_name(node.test.comparisons[0].comparator)
                if seen:
                    guarded.add(seen)
            elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) and _names_failure(
                    node.value, prefix):
                recorded.add(dotted_name(node.target))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value in ("add", "append") and _names_failure(node, prefix):
                recorded.add(dotted_name(node.func.value))
    return bool(guarded & recorded)


def _names_failure(node: cst.CSTNode, prefix: str) -> bool:
    return any(isinstance(n, cst.Attribute) and (dotted_name(n) or "").startswith(prefix)
               for n in walk(node, skip=DEFERRED))


def hands_failure_to_input_source(variable: Optional[str], regions: Sequence[cst.CSTNode], reads: AttemptReads) -> bool:
    """``arguments = self._state.create_arguments(...)`` builds each pass's request, and the
    failure path hands the failure to that same object (``if not self._state.recovers_from(error):
    raise``): the object changes what the next pass sends (anthropic's thread recovery), a
    repair. Only objects the request's *arguments* are built from count, not the object the
    operation is called on (``self.conn.reset(e)`` reconnects: still a retry)."""
    if not variable:
        return False
    for region in regions:
        for node in walk(region, skip=DEFERRED):
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
                continue
            if _PASSIVE.search(node.func.attr.value):
                continue
            if not any(isinstance(a.value, cst.Name) and a.value.value == variable for a in node.args):
                continue
            source = dotted_name(node.func.value)
            if source and source not in ("self", "cls") and _matches(source, reads.inputs - reads.receivers):
                return True
    return False


def counter_names_candidate(param: str, attempt: cst.CSTNode, func: cst.FunctionDef, ctx: ModuleContext) -> bool:
    """A recursion's stepped argument that the attempt sends: ``free_name(base, n + 1)`` with
    ``os.open(f"{base}-{n}", O_EXCL)`` tries the next candidate name, ``connect(hosts, i + 1)``
    with ``hosts[i]`` the next host. A search, not the same operation again; a counter that only
    counts (``retries - 1`` tested in a guard) is named for counting and not read by the attempt."""
    return not bookkeeping(param) and attempt_reads(param, attempt, func, ctx)


def attempt_reads(param: str, attempt: cst.CSTNode, func: cst.FunctionDef, ctx: ModuleContext) -> bool:
    """Does a call of the attempt send ``param`` (through the function's locals)? Logging and
    tuning keywords (``timeout=``) send nothing."""
    reads: Set[str] = set()
    for node in walk(attempt, skip=DEFERRED):
        if isinstance(node, cst.Call) and not _LOGS.match(dotted_name(node.func) or ""):
            for arg in node.args:
                if arg.keyword is None or not _TUNING_KEYWORDS.search(arg.keyword.value):
                    reads.update(_names(arg.value))
            if isinstance(node.func, cst.Attribute):
                reads.update(_names(node.func.value))  # ``hosts[i].connect()``
    writes = ctx.writes_in(func.body)
    todo = list(reads)
    while todo:
        name = todo.pop()
        if name == param:
            return True
        for binding in writes.get(name, ()):
            if binding.value is None:
                continue
            for read in _names(binding.value):
                if read not in reads:
                    reads.add(read)
                    todo.append(read)
    return False

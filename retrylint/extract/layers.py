"""Retry layers: which retry policy a call carries, and which retries wrap such calls (RTY501).

A retry whose operation retries on its own multiplies the attempts: tenacity's 3 attempts
around a ``requests.Session`` mounted with ``HTTPAdapter(max_retries=Retry(total=3))`` make
3 × 4 = 12 calls per failing request. This module answers one question, "which retry policy
does this call carry?" (:func:`carried_policy`), for the layers one module can see:

- a call on a ``requests.Session`` whose ``mount(...)`` adapters retry (``HTTPAdapter(
  max_retries=Retry(...))`` or an integer), or on a ``urllib3.PoolManager(retries=Retry(...))``;
- a call on a boto3/botocore client built with ``config=Config(retries={...})``;
- a call on a redis client built with ``retry=Retry(...)``;
- a call on an httpx client built with ``transport=httpx.HTTPTransport(retries=N)`` (connection
  failures only: httpcore re-raises ``ConnectError``/``ConnectTimeout`` when they run out);
- a call given ``retry=`` a google-api-core ``Retry(...)``;
- a call to a function of the same module (or a method of the same class) that has a retry
  decorator.

The object (session, client) is followed through a name bound once in its scope
(``s = requests.Session()``, ``with ... as s``), a ``self.x`` attribute assigned only such
values in its class, or a module-level name; anything else is not known and carries nothing
(precision first). A whole-program index can answer the question for callees defined in other
modules: :func:`carried_policy` asks ``ctx.program.retry_policy_of(qualified_name)`` when the
program view offers it, so that rules do not change when it does.

:func:`annotate` then gives each retry site the layers found inside its operation (the
decorated function's body, the ``try`` bodies of a retry loop, the body of ``for attempt in
Retrying(...)``), in :attr:`~retrylint.model.RetryPolicy.inner`.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..model import TASK_QUEUE_SOURCES, CatchKind, RetryLayer, RetryPolicy
from ..narrowing import Source, Trigger, Words
from ..narrowing import last_name as narrowing_last_name
from ..syntax import DEFERRED, call_args, dotted_name, unwrap_await, walk
from .context import ModuleContext
from .libraries.common import decorated, resolve

SESSIONS = frozenset({"requests.Session", "requests.session", "requests.sessions.Session", "requests.sessions.session"})
SESSION_CALLS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request", "send"})
POOLS = frozenset({"urllib3.PoolManager", "urllib3.poolmanager.PoolManager", "urllib3.ProxyManager",
                   "urllib3.poolmanager.ProxyManager"})
POOL_CALLS = frozenset({"request", "urlopen", "request_encode_url", "request_encode_body"})
HTTPX_CLIENTS = frozenset({"httpx.Client", "httpx.AsyncClient", "httpx._client.Client", "httpx._client.AsyncClient"})
HTTPX_CALLS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request", "send", "stream"})
REDIS_CLIENTS = frozenset({"redis.Redis", "redis.StrictRedis", "redis.client.Redis", "redis.client.StrictRedis",
                           "redis.from_url", "redis.Redis.from_url", "redis.asyncio.Redis", "redis.asyncio.client.Redis",
                           "redis.asyncio.from_url", "redis.asyncio.Redis.from_url", "redis.RedisCluster",
                           "redis.cluster.RedisCluster", "redis.asyncio.RedisCluster"})
#: Methods of a client that make no request (they build helpers or read local state).
NOT_REQUESTS = frozenset({"get_paginator", "get_waiter", "generate_presigned_url", "generate_presigned_post",
                          "can_paginate", "close", "pipeline", "pubsub", "lock", "register_script", "monitor",
                          "mount", "get_adapter", "merge_environment_settings", "prepare_request", "aclose",
                          "connection_pool", "get_connection_kwargs", "clear"})
#: What a layer raises once its own retries give up: exact classes (matched through
#: :data:`_BASES`), or a package prefix ending with ".".
_FAMILIES = {
    # requests' HTTPAdapter.send turns urllib3's MaxRetryError into these.
    "requests": ("requests.ConnectTimeout", "requests.RetryError", "requests.ProxyError", "requests.SSLError",
                 "requests.ConnectionError", "requests.ReadTimeout"),
    "urllib3": ("urllib3.exceptions.MaxRetryError",),
    # botocore re-raises the last error: ClientError or one of its connection errors.
    "botocore": ("botocore.", "boto3."),
    # redis.retry.Retry re-raises the last of its supported errors (default: these).
    "redis": ("redis.exceptions.ConnectionError", "redis.exceptions.TimeoutError"),
    # google-api-core: RetryError once the timeout passes (build_retry_error).
    "google-api-core": ("google.api_core.exceptions.RetryError",),
    # httpcore retries failed connections only, then re-raises the last: httpx maps it.
    "httpx": ("httpx.ConnectError", "httpx.ConnectTimeout"),
}
_RETRY_LIBRARIES = ("urllib3", "requests", "botocore", "redis", "google-api-core", "httpx")
_BUILDERS = ("Session", "session", "mount", "client", "create_client", "resource", "Redis", "StrictRedis",
             "RedisCluster", "from_url", "PoolManager", "ProxyManager", "Client", "AsyncClient")

#: Narrowing keeps the definitions that build sessions and clients (``__init__``): they say
#: which calls retry on their own, but never make a file worth parsing by themselves.
_BUILT_ATTRIBUTES: "weakref.WeakKeyDictionary[Source, FrozenSet[str]]" = weakref.WeakKeyDictionary()


def _self_attributes(targets: Sequence[ast.expr]) -> Iterator[str]:
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _self_attributes(target.elts)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"):
            yield target.attr


def _targets(statement: ast.stmt) -> List[ast.expr]:
    if isinstance(statement, ast.Assign):
        return list(statement.targets)
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return [statement.target]
    return []


def _built_attributes(source: Source) -> FrozenSet[str]:
    """``self.X`` attributes the file sets to a session or client it builds (``self.session = requests.Session()``)."""
    found = _BUILT_ATTRIBUTES.get(source)
    if found is None:
        names = set()
        for statement in source.statements:
            value = getattr(statement, "value", None)
            if isinstance(value, ast.Call) and narrowing_last_name(value.func) in _BUILDERS:
                names.update(_self_attributes(_targets(statement)))
        found = _BUILT_ATTRIBUTES[source] = frozenset(names)
    return found


def _sets_a_built_attribute(statement: ast.stmt, source: Source) -> bool:
    """``self.session = session`` in another method: RTY501 must see every value the attribute takes."""
    built = _built_attributes(source)
    return bool(built) and any(name in built for name in _self_attributes(_targets(statement)))


#: ... and every other assignment of such an attribute (``def use(self, session): self.session =
#: session``): the object is known only when every value it takes is.
CONTEXT = Trigger(text=Words(*_BUILDERS), calls=frozenset(_BUILDERS), statements=(ast.Assign, ast.AnnAssign, ast.AugAssign),
                  confirm=_sets_a_built_attribute, context=True)


@dataclass(frozen=True)
class Carried:
    """The retry policy a call carries, and how it carries it (for messages)."""

    policy: RetryPolicy
    via: str
    #: Qualified-name prefixes of the exceptions the call raises once its own retries give up;
    #: empty: the inner policy's own retried errors (it re-raises them).
    raises: Tuple[str, ...] = ()
    #: Where the inner policy is when it is in another file (``pkg/client.py:12``).
    where: str = ""


class Layers:
    """The retry policies of one module, indexed by the node that configures each."""

    def __init__(self, ctx: ModuleContext, policies: Sequence[RetryPolicy]) -> None:
        self.ctx = ctx
        self.by_anchor: Dict[int, RetryPolicy] = {id(p.anchor): p for p in policies if p.anchor is not None}
        self._mounts: Optional[Dict[object, List[cst.Call]]] = None
        self._attributes: Dict[Tuple[int, str], Optional[List[cst.BaseExpression]]] = {}

    # ------------------------------------------------------------ the one question

    def carried(self, call: cst.Call) -> Optional[Carried]:
        """Which retry policy ``call`` carries: see :func:`carried_policy`."""
        found = self._by_keyword(call)
        if found is not None:
            return found
        func = call.func
        if isinstance(func, cst.Attribute):
            found = self._method_of_retrying_object(func)
            if found is not None:
                return found
        return self._decorated_callee(func)

    # ------------------------------------------------------------ retry= given to the call

    def _by_keyword(self, call: cst.Call) -> Optional[Carried]:
        """``bucket.get_blob(name, retry=Retry(...))``: a google-api-core policy for this call."""
        _, keywords = call_args(call)
        given = keywords.get("retry")
        if given is None:
            return None
        policy = self._policy_at(given)
        if policy is None or policy.source != "google-api-core":
            return None
        return Carried(policy, f"`retry={self.ctx.code(given)}`", _FAMILIES["google-api-core"])

    def _policy_at(self, expr: Optional[cst.BaseExpression]) -> Optional[RetryPolicy]:
        """The policy configured by ``expr`` (a ``Retry(...)`` call, or a name bound once to one)."""
        if expr is None:
            return None
        resolved = resolve(expr, self.ctx)
        if resolved is None:
            return None
        return self.by_anchor.get(id(resolved))

    # ------------------------------------------------------------ sessions and clients

    def _method_of_retrying_object(self, func: cst.Attribute) -> Optional[Carried]:
        method = func.attr.value
        if method in NOT_REQUESTS or method[:1].isupper() or method.startswith("_"):
            return None
        receiver = unwrap_await(func.value)
        values = self._values_of(receiver)
        if not values:
            return None
        carried = [self._object_policy(value, receiver, method) for value in values]
        if any(c is None for c in carried):
            return None  # one of its values does not retry (or is not known to)
        return _fewest(carried)  # type: ignore[arg-type]

    def _values_of(self, receiver: cst.BaseExpression) -> List[cst.BaseExpression]:
        """Every value the receiver can hold, when all are known; else []."""
        ctx = self.ctx
        if isinstance(receiver, cst.Call):
            return [receiver]
        if isinstance(receiver, cst.Name):
            bindings = [b for b in ctx.bindings(receiver)]
            if not bindings:
                constant = ctx.module_constant(receiver.value)
                return [constant] if constant is not None else []
            if any(b.kind not in ("assign", "annassign", "with") or b.value is None for b in bindings):
                return []
            return [unwrap_await(b.value) for b in bindings]  # type: ignore[arg-type]
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value in ("self", "cls"):
            owner = self._class_of(receiver)
            if owner is None:
                return []
            key = (id(owner), receiver.attr.value)
            if key not in self._attributes:
                self._attributes[key] = _attribute_values(owner, receiver.attr.value)
            values = self._attributes[key]
            return values if values is not None else []
        return []

    def _class_of(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None

    def _object_policy(self, value: cst.BaseExpression, receiver: cst.BaseExpression, method: str) -> Optional[Carried]:
        ctx = self.ctx
        if not isinstance(value, cst.Call):
            return None
        names = ctx.call_name(value)
        positional, keywords = call_args(value)
        name = self.ctx.code(receiver)
        if names & SESSIONS:
            if method not in SESSION_CALLS:
                return None
            return self._mounted(receiver, name)
        if names & POOLS:
            if method not in POOL_CALLS:
                return None
            policy = self._policy_at(keywords.get("retries"))
            if policy is None or policy.source != "urllib3":
                return None
            return Carried(policy, f"`{name}` is a `PoolManager(retries=...)`", _FAMILIES["urllib3"])
        if names & HTTPX_CLIENTS:
            if method not in HTTPX_CALLS:
                return None
            policy = self._policy_at(keywords.get("transport"))
            if policy is None or policy.source != "httpx":
                return None
            return Carried(policy, f"`{name}` is an httpx client whose transport retries failed connections",
                           _FAMILIES["httpx"])
        if names & REDIS_CLIENTS:
            policy = self._policy_at(keywords.get("retry"))
            if policy is None or policy.source != "redis":
                return None
            return Carried(policy, f"`{name}` is a redis client built with `retry=...`", _FAMILIES["redis"])
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in ("client", "resource", "create_client"):
            policy = self._policy_at(keywords.get("config"))
            if policy is None or policy.source != "botocore":
                return None
            return Carried(policy, f"`{name}` is a client built with `config=Config(retries=...)`", _FAMILIES["botocore"])
        return None

    def _mounted(self, receiver: cst.BaseExpression, name: str) -> Optional[Carried]:
        """The retries of the adapters mounted on a session (every mount must retry)."""
        mounts = self._mounts_on(receiver)
        if not mounts:
            return None
        carried: List[Carried] = []
        built = self._binding_ancestors(receiver)
        for mount in mounts:
            if built is None or self._conditional(mount, built):
                return None  # ``if USE_RETRIES: session.mount(...)``: maybe not mounted (precision first)
            positional, keywords = call_args(mount)
            adapter = keywords.get("adapter") or (positional[1] if len(positional) > 1 else None)
            resolved = resolve(adapter, self.ctx) if adapter is not None else None
            if not isinstance(resolved, cst.Call):
                return None
            policy = self.by_anchor.get(id(resolved))  # HTTPAdapter(max_retries=3)
            if policy is None:
                a_positional, a_keywords = call_args(resolved)
                retries = a_keywords.get("max_retries") or (a_positional[2] if len(a_positional) > 2 else None)
                policy = self._policy_at(retries)
            if policy is None or policy.source not in ("urllib3", "requests"):
                return None
            line = self.ctx.location(mount).line
            carried.append(Carried(policy, f"`{name}` is mounted with a retrying `HTTPAdapter` (line {line})",
                                   _FAMILIES["requests"]))
        return _fewest(carried)

    def _binding_ancestors(self, receiver: cst.BaseExpression) -> Optional[Set[int]]:
        """The nodes around every statement that builds the receiver (ids), for :meth:`_conditional`."""
        ctx = self.ctx
        nodes: List[cst.CSTNode] = []
        if isinstance(receiver, cst.Name):
            nodes = [b.node for b in ctx.bindings(receiver)]
            if not nodes:
                return {id(ctx.module)}  # a module-level name seen from elsewhere
        elif isinstance(receiver, cst.Attribute):
            owner = self._class_of(receiver)
            if owner is None:
                return None
            nodes = _attribute_assignments(owner, receiver.attr.value)
        if not nodes:
            return None
        out: Set[int] = set()
        for node in nodes:
            out.add(id(node))
            out.update(id(a) for a in ctx.ancestors(node))
        return out

    def _conditional(self, mount: cst.Call, built: Set[int]) -> bool:
        """Is the mount under a branch that the receiver's construction is not under (an ``if``,
        an ``else``, an ``except``, a ``while``, a conditional expression, a ``match`` case)?"""
        for ancestor in self.ctx.ancestors(mount):
            if id(ancestor) in built:
                return False
            if isinstance(ancestor, _BRANCHES):
                return True
        return False

    def _mounts_on(self, receiver: cst.BaseExpression) -> List[cst.Call]:
        key = self._key(receiver)
        if key is None:
            return []
        if self._mounts is None:
            self._mounts = {}
            for node in walk(self.ctx.module, skip=()):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "mount":
                    owner = self._key(unwrap_await(node.func.value))
                    if owner is not None:
                        self._mounts.setdefault(owner, []).append(node)
        return self._mounts.get(key, [])

    def _key(self, receiver: cst.BaseExpression) -> Optional[object]:
        """The same object wherever it is named: a name's bindings, or ``self.x`` in one class."""
        if isinstance(receiver, cst.Name):
            bindings = self.ctx.bindings(receiver)
            if bindings:
                return ("name", frozenset(id(b.node) for b in bindings))
            return ("global", receiver.value)
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value in ("self", "cls"):
            owner = self._class_of(receiver)
            return ("attribute", id(owner), receiver.attr.value) if owner is not None else None
        return None

    # ------------------------------------------------------------ decorated functions

    def _decorated_callee(self, func: cst.BaseExpression) -> Optional[Carried]:
        target = self._definition(func)
        if target is None:
            return self._elsewhere(func)
        for decorator in target.decorators:
            policy = self.by_anchor.get(id(decorator.decorator))
            if policy is not None and policy.source in TASK_QUEUE_SOURCES:
                return None  # a task called directly runs once: a worker's redelivery is what retries it
            if policy is not None:
                line = self.ctx.location(decorator).line
                return _decorator_carries(policy, decorator, f"`{target.name.value}` has its own retry decorator (line {line})")
        return None

    def _definition(self, func: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        ctx = self.ctx
        if isinstance(func, cst.Name):
            defs = [b.node for b in ctx.bindings(func)]
            if len(defs) == 1 and isinstance(defs[0], cst.FunctionDef):
                return defs[0]
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            owner = self._class_of(func)
            if owner is None:
                return None
            found = [s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value]
            return found[0] if len(found) == 1 else None
        return None

    def _elsewhere(self, func: cst.BaseExpression) -> Optional[Carried]:
        """A callee defined in another module: asked of the whole-program view, when it can answer."""
        ask = getattr(getattr(self.ctx, "program", None), "retry_policy_of", None)
        if ask is None or not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        for qualified in sorted(self.ctx.qualified_names(func)):
            policy = ask(qualified)
            if isinstance(policy, RetryPolicy):
                # Whether a tenacity policy there re-raises is not in the model: assume RetryError.
                raises = _TENACITY_RAISES if policy.source == "tenacity" else ()
                where = policy.origins[0] if policy.origins else ""
                return Carried(policy, f"`{self.ctx.code(func)}` is imported with its own retry decorator", raises, where)
        return None


_TENACITY_RAISES = ("tenacity.RetryError", "tenacity.")


def _decorator_carries(policy: RetryPolicy, decorator: cst.Decorator, via: str) -> Carried:
    """The layer a retry decorator adds: a tenacity one without ``reraise=True`` gives up
    with ``RetryError``, the others re-raise what they retried."""
    raises = _TENACITY_RAISES if policy.source == "tenacity" and not _reraises(decorator.decorator) else ()
    return Carried(policy, via, raises)


def _reraises(decorator: cst.BaseExpression) -> bool:
    if not isinstance(decorator, cst.Call):
        return False
    _, keywords = call_args(decorator)
    value = keywords.get("reraise")
    return isinstance(value, cst.Name) and value.value == "True"


#: Statements and expressions whose body may not run.
_BRANCHES = (cst.If, cst.Else, cst.While, cst.ExceptHandler, cst.ExceptStarHandler, cst.IfExp, cst.Match,
             cst.BooleanOperation)


def _attribute_assignments(owner: cst.ClassDef, attr: str) -> List[cst.CSTNode]:
    """The statements of the class that assign ``self.<attr>``."""
    out: List[cst.CSTNode] = []
    for node in walk(owner, skip=(cst.ClassDef,)):
        targets: List[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
        if any(isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value in ("self", "cls")
               and t.attr.value == attr for t in targets):
            out.append(node)
    return out


def _attribute_values(owner: cst.ClassDef, attr: str) -> Optional[List[cst.BaseExpression]]:
    """Every value ``self.<attr>`` is given in the class; None when one is not a plain assignment."""
    values: List[cst.BaseExpression] = []
    for node in walk(owner, skip=(cst.ClassDef,)):
        targets: List[cst.BaseExpression] = []
        value: Optional[cst.BaseExpression] = None
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            value = node.value
        elif isinstance(node, cst.AnnAssign):
            targets = [node.target]
            value = node.value
        elif isinstance(node, cst.AugAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                    target.value.value in ("self", "cls") and target.attr.value == attr:
                if value is None or len(targets) > 1 and isinstance(node, cst.AugAssign):
                    return None
                values.append(unwrap_await(value))
            elif isinstance(target, (cst.Tuple, cst.List)) and any(
                    dotted_name(e.value) in (f"self.{attr}", f"cls.{attr}") for e in target.elements):
                return None
    return values


def _fewest(carried: Sequence[Carried]) -> Optional[Carried]:
    """Of several possible layers (mounts, values), the one that retries least."""
    if not carried:
        return None

    def attempts(c: Carried) -> float:
        value = c.policy.bound.attempts
        return float(value) if isinstance(value, (int, float)) else float("inf")

    return min(carried, key=attempts)


def carried_policy(call: cst.Call, layers: Layers) -> Optional[Carried]:
    """Which retry policy ``call`` carries, if one is known: THE question of retry layering.

    Answered from the module (sessions, clients, same-module decorated functions); for a
    callee in another module, from ``ctx.program.retry_policy_of(qualified_name)`` when the
    whole-program view provides it.
    """
    return layers.carried(call)


# ---------------------------------------------------------------- retried operations


def operation_calls(policy: RetryPolicy, ctx: ModuleContext) -> Iterator[Tuple[cst.Call, cst.CSTNode]]:
    """The calls a retry site repeats on each attempt (nested definitions excluded), each with
    the node to report it at."""
    anchor = policy.anchor
    if anchor is None:
        return
    if isinstance(anchor, (cst.For, cst.While)):
        for node in walk(anchor.body):
            if isinstance(node, cst.Try):
                yield from _calls(node.body)
        return
    function = decorated(anchor, ctx)
    if function is not None:
        yield from _calls(function.body)
        return
    parent = ctx.parent(anchor)
    if isinstance(parent, cst.For) and parent.iter is anchor:
        yield from _calls(parent.body)  # for attempt in Retrying(...): with attempt: ...
        return
    if isinstance(anchor, cst.Call):
        # retry_call(session.get, ...) / Retrying(...)(session.get, url): the function handed over.
        positional, _ = call_args(anchor)
        handed = positional[0] if policy.source == "retry" and positional else None
        if isinstance(parent, cst.Call) and parent.func is anchor:
            inner_positional, _ = call_args(parent)
            handed = inner_positional[0] if inner_positional else None
        if isinstance(handed, (cst.Name, cst.Attribute)):
            yield cst.Call(func=handed), handed  # a stand-in call: what calling it carries


def _calls(region: cst.CSTNode) -> Iterator[Tuple[cst.Call, cst.CSTNode]]:
    for node in walk(region, skip=DEFERRED):
        if isinstance(node, cst.Call):
            yield node, node


#: Known exception classes and their bases (names as retrylint qualifies them, normalised by
#: :func:`_normal`): enough to see that two clauses can catch the same failure.
_BASES = {
    "requests.ConnectTimeout": ("requests.ConnectionError", "requests.Timeout"),
    "requests.ReadTimeout": ("requests.Timeout",),
    "requests.ProxyError": ("requests.ConnectionError",),
    "requests.SSLError": ("requests.ConnectionError",),
    "requests.ConnectionError": ("requests.RequestException",),
    "requests.Timeout": ("requests.RequestException",),
    "requests.HTTPError": ("requests.RequestException",),
    "requests.RetryError": ("requests.RequestException",),
    "requests.ChunkedEncodingError": ("requests.RequestException",),
    "requests.RequestException": ("OSError",),
    "urllib3.exceptions.MaxRetryError": ("urllib3.exceptions.RequestError",),
    "urllib3.exceptions.RequestError": ("urllib3.exceptions.PoolError",),
    "urllib3.exceptions.PoolError": ("urllib3.exceptions.HTTPError",),
    "redis.exceptions.ConnectionError": ("redis.exceptions.RedisError",),
    "redis.exceptions.TimeoutError": ("redis.exceptions.RedisError",),
    "google.api_core.exceptions.RetryError": ("google.api_core.exceptions.GoogleAPIError",),
    "httpx.ConnectError": ("httpx.NetworkError",),
    "httpx.NetworkError": ("httpx.TransportError",),
    "httpx.ConnectTimeout": ("httpx.TimeoutException",),
    "httpx.TimeoutException": ("httpx.TransportError",),
    "httpx.TransportError": ("httpx.RequestError",),
    "httpx.RequestError": ("httpx.HTTPError",),
    "ConnectionError": ("OSError",),
    "TimeoutError": ("OSError",),
    "ConnectionResetError": ("ConnectionError",),
    "ConnectionRefusedError": ("ConnectionError",),
    "ConnectionAbortedError": ("ConnectionError",),
    "BrokenPipeError": ("ConnectionError",),
}
_ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError", "socket.error": "OSError", "socket.timeout": "TimeoutError"}


#: Where a package re-exports its exceptions: ``redis.ConnectionError`` is
#: ``redis.exceptions.ConnectionError``.
_HOMES = {"redis.": "redis.exceptions.", "urllib3.": "urllib3.exceptions.", "google.api_core.": "google.api_core.exceptions."}


def _normal(name: str) -> str:
    if name.startswith("requests.exceptions."):
        name = "requests." + name[len("requests.exceptions."):]
    for package, home in _HOMES.items():
        if name.startswith(package) and not name.startswith(home) and name.count(".") == package.count("."):
            name = home + name[len(package):]
    return _ALIASES.get(name, name)


def _lineage(name: str) -> FrozenSet[str]:
    """The class and its known bases."""
    seen = {name}
    stack = [name]
    while stack:
        for base in _BASES.get(stack.pop(), ()):
            if base not in seen:
                seen.add(base)
                stack.append(base)
    return frozenset(seen)


def overlaps(a: str, b: str) -> bool:
    """Whether clauses naming ``a`` and ``b`` can catch the same failure: one is a base of the
    other, or a known class derives from both (``requests.ConnectTimeout`` is a
    ``ConnectionError`` and a ``Timeout``)."""
    a, b = _normal(a), _normal(b)
    if a == b or a in _lineage(b) or b in _lineage(a):
        return True
    return any(a in _lineage(child) and b in _lineage(child) for child in _BASES)


def retries_failures_of(outer: RetryPolicy, carried: Carried, directly: bool = False) -> bool:
    """Whether ``outer`` retries what the inner layer raises once it gives up. ``directly``:
    what the inner one raises must *be* one of the outer one's errors (or a subclass); a
    class that merely derives from both (``ConnectTimeout``) is not enough: decorators
    stacked for different errors (``Timeout`` above, ``ConnectionError`` below) split the
    failures between them rather than multiply."""
    raises = carried.raises or tuple(n for c in carried.policy.errors for n in c.names)
    # An inner policy that retries everything and re-raises can end with any exception.
    anything = not carried.raises and any(c.kind is CatchKind.CATCH_ALL for c in carried.policy.errors)
    for clause in outer.errors:
        if clause.kind is CatchKind.CATCH_ALL:
            return True
        if clause.kind is CatchKind.NAMED and anything:
            return True
        if clause.kind is CatchKind.NAMED and raises:
            if any(n.startswith(r) for n in clause.names for r in raises if r.endswith(".")):
                return True
            match = _is_a if directly else overlaps
            if any(match(r, n) for n in clause.names for r in raises if not r.endswith(".")):
                return True
    return False


def _is_a(name: str, base: str) -> bool:
    name, base = _normal(name), _normal(base)
    return name == base or base in _lineage(name)


def _stacked_below(policy: RetryPolicy, layers: Layers) -> Iterator[RetryLayer]:
    """Retry decorators stacked *below* a retry decorator on the same function: the lower one
    is applied first, so every outer attempt runs all of its attempts."""
    ctx = layers.ctx
    function = decorated(policy.anchor, ctx) if policy.anchor is not None else None
    if function is None:
        return
    below = False
    for decorator in function.decorators:
        if decorator.decorator is policy.anchor:
            below = True
            continue
        inner = layers.by_anchor.get(id(decorator.decorator)) if below else None
        if inner is None or inner is policy or inner.source in TASK_QUEUE_SOURCES:
            continue
        carried = _decorator_carries(inner, decorator, f"stacked below it on `{function.name.value}`")
        if retries_failures_of(policy, carried, directly=True):
            yield RetryLayer(function.name.value, ctx.location(decorator), inner, carried.via)


def annotate(ctx: ModuleContext, policies: Sequence[RetryPolicy]) -> List[RetryPolicy]:
    """Each policy with the retry layers found inside its operation."""
    if not policies:
        return list(policies)
    layers = Layers(ctx, policies)
    out: List[RetryPolicy] = []
    for policy in policies:
        if policy.source in _RETRY_LIBRARIES and (policy.anchor is None or decorated(policy.anchor, ctx) is None):
            out.append(policy)  # a client's own policy object: a layer, not a retry around one
            continue
        found: List[RetryLayer] = list(_stacked_below(policy, layers))
        seen = {id(layer.policy.anchor) for layer in found}
        for call, where in operation_calls(policy, ctx):
            carried = carried_policy(call, layers)
            # a policy from another file has no node here: it is its own identity
            identity = id(carried.policy.anchor) if carried is not None and carried.policy.anchor is not None \
                else id(carried.policy) if carried is not None else None
            if carried is None or carried.policy is policy or identity in seen:
                continue
            if not retries_failures_of(policy, carried):
                continue
            seen.add(identity)
            found.append(RetryLayer(ctx.code(call.func), ctx.location(where), carried.policy, carried.via, carried.where))
        out.append(policy.with_(inner=tuple(found)) if found else policy)
    return out

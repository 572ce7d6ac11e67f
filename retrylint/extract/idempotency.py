"""RTY503: creates that a retry runs again (HTTP POST/PATCH, SQL INSERT, payment calls, …).

A retry repeats what its attempt did. When the attempt *created* something and only the
answer was lost (a timeout after the server committed, a connection reset after the write, a
502 from a proxy whose upstream applied the request), the repeat creates it a second time,
unless the request carries a key the server deduplicates on.

What is retried (the *retried region*):

* a hand-written retry loop: its body, except the ``except``/``finally`` blocks;
* a retry by recursion, a function decorated by a retry library (tenacity, backoff, stamina,
  retrying, retry, a celery task that retries, a dramatiq actor): the function's body, except
  its ``except``/``finally`` blocks;
* ``for attempt in Retrying(...)`` / ``stamina.retry_context(...)``: the loop's body;
* a requests ``Session`` mounted with ``HTTPAdapter(max_retries=Retry(...))`` whose ``Retry``
  re-sends POST (``allowed_methods`` names it, or is ``None``/``False``: every method) after
  the request went out (read or status retries): every POST/PATCH of that session in the
  module. A ``Retry`` that can only retry connection errors (``read=0`` and no status retries)
  never re-sends a request the server saw, nor does httpx's ``HTTPTransport(retries=...)``
  (connection failures only), nor urllib3's default ``allowed_methods`` (no POST).

What is a create, and what makes it safe (precision first: anything not read is not judged):

* HTTP POST/PATCH (requests, httpx, aiohttp; ``requests.post``, ``session.post``,
  ``client.request("POST", …)``) with no idempotency key: a header or body field named like
  ``Idempotency-Key``, ``X-Idempotency-Key``, ``idempotency_key``, a dedup/request id or a
  client token. Headers or a body we cannot read (a variable, ``**kwargs``) decide nothing.
  A POST to an endpoint named for a read, a login or a computation (``search``, ``query``,
  ``graphql``, ``token``, ``oauth``, ``login``, ``auth``, ``verify``, ``validate``,
  ``completions``, ``embeddings``, …) is not a create: POST is only the transport there; nor is
  one whose last path segment cannot be read (a parameter, ``f"https://{host}/api/{route}"``):
  it may be either.
* SQL ``INSERT`` (``cursor.execute("INSERT …")``, SQLAlchemy ``insert(...)``) with no
  ``ON CONFLICT``/``ON DUPLICATE KEY``/``INSERT OR IGNORE|REPLACE``/``INSERT IGNORE``/
  ``WHERE NOT EXISTS``/``MERGE``/``on_conflict_do_*``; Django ``objects.create(...)`` and
  ``bulk_create`` without ``ignore_conflicts``/``update_conflicts`` (``get_or_create`` and
  ``update_or_create`` look up first); a SQLAlchemy ORM ``session.add(Model(...))`` that the
  attempt commits (``session.commit()`` on the same session; ``merge`` looks up first).
* Payments: ``stripe.<Resource>.create(...)`` and ``client.<charges|payment_intents|refunds|
  transfers|payouts>.create(...)`` without ``idempotency_key`` (also in ``options={…}``).
* DynamoDB ``put_item`` without ``ConditionExpression``/``Expected``, *when the item holds a
  value made anew on each attempt* (``uuid4()``, ``time.time()``, ``datetime.now()``): an
  unconditional put of the same item is an overwrite, which a repeat leaves as it was.
* SQS ``send_message`` to a FIFO queue (a ``.fifo`` URL) whose ``MessageDeduplicationId`` is
  made anew on each attempt, or which has none and a body made anew on each attempt: without
  a deduplication id SQS either refuses the send (content-based deduplication off) or
  deduplicates on the body's hash, so only a body or id that changes between attempts
  defeats it. Standard (non-FIFO) queues are at-least-once anyway; their consumers dedupe.

Not judged either: a retry of connection failures only (``requests.ConnectTimeout``,
``httpx.ConnectError``/``ConnectTimeout``, ``aiohttp.ClientConnectorError``: the request never
left), a database create inside ``with transaction.atomic():`` (or
``session.begin()``) that ends the attempt (a failed attempt rolls it back), and a create that
records the attempt number (``is_retry=self.request.retries > 0``): a row per attempt is meant.

A key present but made inside the retried region (``headers={"Idempotency-Key":
str(uuid4())}`` in the decorated function) changes on every attempt: it is reported too.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..model import RetriedCreate, RetryPolicy, known
from ..syntax import DEFERRED, call_args, dotted_name, last_name, number, unwrap_await, walk
from .context import ModuleContext
from .libraries.common import decorated, resolve

#: Header, keyword and body-field names that carry an idempotency or deduplication key.
KEY_NAME = re.compile(r"idempot|dedup|request[-_ ]?id|client[-_ ]?token|unique[-_ ]?key|operation[-_ ]?id", re.I)
#: Endpoints named for a read, a login or a computation: POST is only the transport there.
READ_ENDPOINT = re.compile(
    r"search|query|queries|graphql|_count\b|/count\b|token|oauth|login|logout|signin|sign_in|auth|verify|validat|"
    r"lookup|estimate|preview|explain|introspect|completions|embeddings|chat|predict|inference|infer\b|"
    r"generate|classify|tokeniz|moderat|translate|rerank|render|/check|_check|batchget|batch_get|/get\b|/list\b|"
    r"/read\b|/fetch\b|/find\b|/describe|ping|health|echo|jsonrpc|json-rpc|/rpc\b|xmlrpc",
    re.I,
)
HTTP_CLIENTS = ("requests", "httpx", "aiohttp")
_HTTP_FUNCTIONS = frozenset({"requests.post", "requests.patch", "requests.api.post", "requests.api.patch",
                             "httpx.post", "httpx.patch"})
_HTTP_REQUEST_FUNCTIONS = frozenset({"requests.request", "requests.api.request", "httpx.request"})
_CLIENT_FACTORIES = frozenset({"requests.Session", "requests.session", "requests.sessions.Session", "httpx.Client",
                               "httpx.AsyncClient", "aiohttp.ClientSession", "aiohttp.client.ClientSession"})
_HTTP_RECEIVER = re.compile(r"(^|_)(session|sess|client|http|https|api|conn|requests|httpx)s?$", re.I)
#: Calls that make a value new on every evaluation.
FRESH = frozenset({
    "uuid.uuid1", "uuid.uuid4", "uuid.uuid6", "uuid.uuid7", "time.time", "time.time_ns", "datetime.datetime.now",
    "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today", "secrets.token_hex",
    "secrets.token_urlsafe", "secrets.token_bytes", "os.urandom", "random.random", "random.randint",
    "random.getrandbits", "ulid.new", "ulid.ULID", "nanoid.generate", "shortuuid.uuid", "bson.ObjectId",
    "bson.objectid.ObjectId",
})
_INSERT = re.compile(r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?:WITH\b.*?\)\s*)?INSERT\b", re.I | re.S)
_UPSERT = re.compile(r"ON\s+CONFLICT|ON\s+DUPLICATE\s+KEY|INSERT\s+OR\s+(?:IGNORE|REPLACE)|INSERT\s+IGNORE|"
                     r"WHERE\s+NOT\s+EXISTS|\bMERGE\b|\bUPSERT\b|IF\s+NOT\s+EXISTS", re.I)
_SQL_METHODS = frozenset({"execute", "executemany", "exec_driver_sql", "fetch", "fetchrow", "fetchval", "executescript"})
_SAFE_INSERT_CHAIN = frozenset({"on_conflict_do_nothing", "on_conflict_do_update", "on_duplicate_key_update"})
_PAYMENT_COLLECTIONS = frozenset({"charges", "payment_intents", "refunds", "transfers", "payouts", "paymentintents"})
_PAYMENT_RESOURCES = re.compile(r"^stripe\.(?:\w+\.)*(Charge|PaymentIntent|Refund|Transfer|Payout|Invoice|InvoiceItem|"
                                r"Subscription|Customer|Topup|CreditNote|SetupIntent|Checkout\.Session|Order)\.create$")


def _fresh_call(call: cst.Call, ctx: ModuleContext) -> bool:
    names = ctx.call_name(call)
    if names & FRESH:
        return True
    # ``uuid4().hex`` is an attribute of a call; ``str(uuid.uuid4())`` a call around one.
    return False


def _generated(expr: Optional[cst.CSTNode], ctx: ModuleContext, region: cst.CSTNode, depth: int = 0) -> Optional[str]:
    """The source of a value made anew on each attempt inside ``expr`` (``uuid.uuid4()``), following
    names bound inside the retried region; None when there is none."""
    if expr is None or depth > 3:
        return None
    for node in walk(expr, skip=DEFERRED):
        if isinstance(node, cst.Call) and _fresh_call(node, ctx):
            return ctx.code(node)
        if isinstance(node, cst.Name) and depth < 3:
            for binding in ctx.bindings(node):
                if binding.kind in ("assign", "annassign") and binding.value is not None and ctx.is_inside(binding.node, region):
                    found = _generated(binding.value, ctx, region, depth + 1)
                    if found:
                        return found
    return None


def _string_text(expr: Optional[cst.BaseExpression], ctx: ModuleContext, depth: int = 0) -> Optional[str]:
    """The text of a string (literal, concatenation, f-string with holes as ``{}``, ``text("…")``), else None."""
    expr = resolve(expr, ctx) if expr is not None else None
    if expr is None or depth > 40:
        return None
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else value.decode("latin-1")
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _string_text(expr.left, ctx, depth + 1), _string_text(expr.right, ctx, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(expr, cst.FormattedString):
        parts = []
        for part in expr.parts:
            parts.append(part.value if isinstance(part, cst.FormattedStringText) else "{}")
        return "".join(parts)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left, right = _string_text(expr.left, ctx, depth + 1), _string_text(expr.right, ctx, depth + 1)
        if left is None and right is None:
            return None
        return (left or "{}") + (right or "{}")
    if isinstance(expr, cst.Call) and last_name(expr.func) in ("urljoin", "join") and len(call_args(expr)[0]) >= 2:
        parts = [_string_text(p, ctx, depth + 1) for p in call_args(expr)[0]]
        return "/".join(p if p is not None else "{}" for p in parts)  # urljoin(base, "v4/jobGroups")
    if isinstance(expr, cst.Call) and last_name(expr.func) in ("text", "format", "dedent", "strip"):
        positional, _ = call_args(expr)
        if last_name(expr.func) == "format" and isinstance(expr.func, cst.Attribute):
            return _string_text(expr.func.value, ctx, depth + 1)
        if positional:
            return _string_text(positional[0], ctx, depth + 1)
    return None


def _property_value(expr: cst.BaseExpression, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """``self.headers`` where ``headers`` is a ``@property`` of the enclosing class that returns one
    expression (or a name bound once to one): that expression."""
    if not (isinstance(expr, cst.Attribute) and dotted_name(expr.value) in ("self", "cls")):
        return None
    owner = next((a for a in ctx.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
    if owner is None or not isinstance(owner.body, cst.IndentedBlock):
        return None
    for member in owner.body.body:
        if (isinstance(member, cst.FunctionDef) and member.name.value == expr.attr.value
                and any(dotted_name(d.decorator) in ("property", "functools.cached_property", "cached_property")
                        for d in member.decorators)):
            returns = [n for n in walk(member.body) if isinstance(n, cst.Return)]
            if len(returns) == 1 and returns[0].value is not None:
                return resolve(returns[0].value, ctx)
    return None


def _dict_keys(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Optional[Dict[str, cst.BaseExpression]]:
    """Keys of a dict literal or ``dict(k=v)`` (nested dicts merged); None when it cannot be read."""
    expr = resolve(expr, ctx) if expr is not None else None
    if isinstance(expr, cst.Attribute):
        expr = _property_value(expr, ctx) or expr
    if isinstance(expr, cst.Dict):
        out: Dict[str, cst.BaseExpression] = {}
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                key = _string_text(element.key, ctx)
                if key is None:
                    return None
                out[key] = element.value
                nested = _dict_keys(element.value, ctx) if isinstance(element.value, (cst.Dict, cst.Call)) else None
                if nested:
                    out.update(nested)
            else:
                return None  # ``**other``
        return out
    if isinstance(expr, cst.Call) and dotted_name(expr.func) == "dict":
        positional, keywords = call_args(expr)
        if positional or any(a.star for a in expr.args):
            return None
        return dict(keywords)
    return None


def _visible_keys(expr: Optional[cst.BaseExpression], ctx: ModuleContext, scope: cst.CSTNode,
                  depth: int = 0) -> Dict[str, cst.BaseExpression]:
    """Every key a request visibly sends in ``expr``, even where the rest cannot be read: the keys
    beside a ``**spread`` (``{**order, "idempotency_key": …}``), ``dict(order, key=…)``,
    ``json.dumps(...)`` of such a body, nested bodies, and the items a name is given in ``scope``
    (``body["idempotency_key"] = …``, ``body.update(...)``, ``body.setdefault(...)``, ``body |= {…}``).
    Precision first: a key set anywhere in the scope counts."""
    out: Dict[str, cst.BaseExpression] = {}
    expr = unwrap_await(expr) if expr is not None else None
    if expr is None or depth > 6:
        return out
    if isinstance(expr, cst.Name):
        out.update(_items_set(expr.value, ctx, scope, depth))
        resolved = resolve(expr, ctx)
        if resolved is not None and not (isinstance(resolved, cst.Name) and resolved.value == expr.value):
            out.update(_visible_keys(resolved, ctx, scope, depth + 1))
        return out
    if isinstance(expr, cst.Attribute):
        value = _property_value(expr, ctx)
        return _visible_keys(value, ctx, scope, depth + 1) if value is not None else out
    if isinstance(expr, cst.Dict):
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                key = _string_text(element.key, ctx)
                if key is not None:
                    out[key] = element.value
                if isinstance(element.value, (cst.Dict, cst.Call, cst.Name)):
                    out.update(_visible_keys(element.value, ctx, scope, depth + 1))
            elif isinstance(element, cst.StarredDictElement):
                out.update(_visible_keys(element.value, ctx, scope, depth + 1))
        return out
    if isinstance(expr, cst.Call):
        positional, keywords = call_args(expr)
        func = last_name(expr.func)
        if dotted_name(expr.func) == "dict":
            for arg in positional:
                out.update(_visible_keys(arg, ctx, scope, depth + 1))
            out.update({k: v for k, v in keywords.items() if k})
        elif func in ("dumps", "dump_json", "urlencode") and positional:
            out.update(_visible_keys(positional[0], ctx, scope, depth + 1))
    return out


def _items_set(name: str, ctx: ModuleContext, scope: cst.CSTNode, depth: int) -> Dict[str, cst.BaseExpression]:
    """The items ``name`` is given in ``scope``: subscript assignments, ``update``, ``setdefault``, ``|=``."""
    out: Dict[str, cst.BaseExpression] = {}
    for node in walk(scope, skip=DEFERRED):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                sub = target.target
                if (isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name) and sub.value.value == name
                        and len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index)):
                    key = _string_text(sub.slice[0].slice.value, ctx)
                    if key is not None:
                        out[key] = node.value
        elif (isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == name
              and isinstance(node.operator, cst.BitOrAssign)):
            out.update(_visible_keys(node.value, ctx, scope, depth + 1))
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
              and node.func.value.value == name and node.func.attr.value in ("update", "setdefault")):
            positional, keywords = call_args(node)
            if node.func.attr.value == "update":
                for arg in positional:
                    out.update(_visible_keys(arg, ctx, scope, depth + 1))
                out.update({k: v for k, v in keywords.items() if k})
            elif positional:
                key = _string_text(positional[0], ctx)
                if key is not None:
                    out[key] = positional[1] if len(positional) > 1 else positional[0]
    return out


class _Creates:
    """Finds the creates in one module's retried regions."""

    def __init__(self, ctx: ModuleContext) -> None:
        self.ctx = ctx
        self.session_keys = self._session_keys()

    # ------------------------------------------------------------ regions

    def regions(self, policy: RetryPolicy) -> List[cst.CSTNode]:
        ctx = self.ctx
        anchor = policy.anchor
        if policy.source == "loop" and isinstance(anchor, (cst.For, cst.While)):
            return [anchor.body]
        if policy.source == "recursion":
            func = self._function_at(policy)
            return [func.body] if func is not None else []
        if anchor is None:
            return []
        func = decorated(anchor, ctx)
        if func is not None:
            return [func.body]
        parent = ctx.parent(anchor)
        if isinstance(parent, cst.For) and parent.iter is anchor:
            return [parent.body]  # for attempt in Retrying(...): with attempt: ...
        if policy.source == "celery" and isinstance(anchor, cst.Call):
            func = ctx.enclosing_function(anchor)  # self.retry(...) reruns the whole task
            return [func.body] if func is not None else []
        return []

    def _function_at(self, policy: RetryPolicy) -> Optional[cst.FunctionDef]:
        extent = policy.extent
        if extent is None:
            return None
        for node in walk(self.ctx.module, skip=()):
            if isinstance(node, cst.FunctionDef):
                where = self.ctx.location(node)
                if where.line == extent.line and where.column == extent.column:
                    return node
        return None

    def calls_in(self, region: cst.CSTNode) -> Iterable[cst.Call]:
        """Calls of the attempt: not in ``except``/``finally`` blocks, nor nested definitions."""
        skip = DEFERRED + (cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)
        for node in walk(region, skip=skip):
            if isinstance(node, cst.Call):
                yield node

    # ------------------------------------------------------------ creates

    def classify(self, call: cst.Call, region: cst.CSTNode) -> Optional[Tuple[str, Optional[bool], str]]:
        """(operation, keyed, advice) for a create; keyed None when it cannot be told."""
        for check in (self._http, self._payment, self._sql, self._dynamodb, self._fifo):
            found = check(call, region)
            if found is not None:
                return found
        return None

    def _http_method(self, call: cst.Call) -> Optional[str]:
        ctx = self.ctx
        names = ctx.call_name(call)
        method = last_name(call.func)
        if names & _HTTP_FUNCTIONS:
            return method.upper() if method else None
        positional, keywords = call_args(call)
        if names & _HTTP_REQUEST_FUNCTIONS or (method == "request" and self._http_receiver(call)):
            verb = _string_text(keywords.get("method") or (positional[0] if positional else None), ctx)
            return verb.upper() if verb and verb.upper() in ("POST", "PATCH") else None
        if method in ("post", "patch") and self._http_receiver(call):
            return method.upper()
        return None

    def _http_receiver(self, call: cst.Call) -> bool:
        """The receiver is a requests/httpx/aiohttp client (traced, or named so in a module that imports one)."""
        if not isinstance(call.func, cst.Attribute):
            return False
        receiver = unwrap_await(call.func.value)
        ctx = self.ctx
        for origin in self._origins(receiver):
            names = ctx.call_name(origin) if isinstance(origin, cst.Call) else ctx.qualified_names(origin)
            if names & _CLIENT_FACTORIES or any(n.split(".")[0] in HTTP_CLIENTS for n in names):
                return True
            if names:
                return False  # traced to something else
        name = (dotted_name(receiver) or "").rsplit(".", 1)[-1]
        return bool(name) and bool(_HTTP_RECEIVER.search(name)) and self._imports_http()

    def _origins(self, expr: cst.BaseExpression, depth: int = 0) -> List[cst.CSTNode]:
        if depth > 6:
            return []
        expr = unwrap_await(expr)
        if isinstance(expr, cst.Call):
            return [expr]
        if isinstance(expr, cst.Name):
            bindings = self.ctx.bindings(expr)
            if len(bindings) == 1:
                binding = bindings[0]
                if binding.kind in ("assign", "annassign", "with") and binding.value is not None:
                    return self._origins(binding.value, depth + 1)
                if binding.kind == "param" and isinstance(binding.node, cst.Param) and binding.node.annotation:
                    return [binding.node.annotation.annotation]
            return []
        if isinstance(expr, cst.Attribute) and dotted_name(expr.value) in ("self", "cls"):
            values = self._attribute_values(expr)
            if len(values) == 1:
                return self._origins(values[0], depth + 1)
        return []

    def _attribute_values(self, expr: cst.Attribute) -> List[cst.BaseExpression]:
        owner = next((a for a in self.ctx.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
        if owner is None:
            return []
        target = dotted_name(expr)
        values = []
        for binding_list in [self.ctx.writes_in(owner).get(target or "", [])]:
            values += [b.value for b in binding_list if b.value is not None]
        return values

    def _imports_http(self) -> bool:
        if not hasattr(self, "_http_imported"):
            found = False
            for node in walk(self.ctx.module, skip=()):
                if isinstance(node, cst.Import):
                    found = found or any((dotted_name(a.name) or "").split(".")[0] in HTTP_CLIENTS for a in node.names)
                elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
                    found = found or (dotted_name(node.module) or "").split(".")[0] in HTTP_CLIENTS
            self._http_imported = found
        return self._http_imported

    def _session_keys(self) -> Set[str]:
        """Clients whose default headers carry a key: ``session.headers.update({"Idempotency-Key": …})``,
        ``session.headers["Idempotency-Key"] = …``, ``httpx.Client(headers={…})``."""
        out: Set[str] = set()
        for node in walk(self.ctx.module, skip=()):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "update":
                owner = node.func.value
                if isinstance(owner, cst.Attribute) and owner.attr.value == "headers":
                    positional, keywords = call_args(node)
                    keys = _dict_keys(positional[0], self.ctx) if positional else dict(keywords)
                    if keys is None or any(KEY_NAME.search(k) for k in keys):
                        out.add(dotted_name(owner.value) or "?")
            elif isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
                owner = node.target.value
                if isinstance(owner, cst.Attribute) and owner.attr.value == "headers":
                    element = node.target.slice[0].slice if node.target.slice else None
                    key = _string_text(element.value, self.ctx) if isinstance(element, cst.Index) else None
                    if key is None or KEY_NAME.search(key):
                        out.add(dotted_name(owner.value) or "?")
        return out

    def _http(self, call: cst.Call, region: cst.CSTNode) -> Optional[Tuple[str, Optional[bool], str]]:
        verb = self._http_method(call)
        if verb is None:
            return None
        ctx = self.ctx
        positional, keywords = call_args(call)
        index = 1 if last_name(call.func) == "request" and "method" not in keywords else 0
        url = keywords.get("url") or (positional[index] if len(positional) > index else None)
        url_text = _string_text(url, ctx)
        if not url_text or not _KNOWN_PATH.search(_SCHEME_HOST.sub("", url_text)) or READ_ENDPOINT.search(url_text):
            return None  # an endpoint we cannot name may be a read (a search, a token): not judged
        operation = f"HTTP {verb}" + (f" to `{_short(url_text)}`" if url_text else "")
        advice = "send an `Idempotency-Key` header made once per operation, before the retry"
        if any(a.star for a in call.args):
            return operation, None, advice
        receiver = dotted_name(call.func.value) if isinstance(call.func, cst.Attribute) else None
        if receiver in self.session_keys or "?" in self.session_keys:
            return operation, True, advice
        keyed = False
        scope: cst.CSTNode = ctx.enclosing_function(call) or ctx.module
        for name in ("headers", "json", "data", "params", "content"):
            expr = keywords.get(name)
            if expr is None:
                continue
            keys = _dict_keys(expr, ctx)
            # A key visibly sent counts even where the rest of the body cannot be read.
            visible = _visible_keys(expr, ctx, scope)
            if keys is None:
                if any(KEY_NAME.search(key) for key in visible):
                    keys = visible
                elif name == "headers":
                    return operation, None, advice  # headers we cannot read may hold the key
                else:
                    continue
            else:
                keys = {**keys, **visible}
            for key, value_expr in keys.items():
                if KEY_NAME.search(key):
                    fresh = _generated(value_expr, ctx, region)
                    if fresh:
                        return operation, False, _fresh_advice(key, fresh)
                    keyed = True
        if url_text and KEY_NAME.search(url_text):
            keyed = True
        return operation, keyed, advice

    def _payment(self, call: cst.Call, region: cst.CSTNode) -> Optional[Tuple[str, Optional[bool], str]]:
        if last_name(call.func) != "create" or not isinstance(call.func, cst.Attribute):
            return None
        ctx = self.ctx
        names = ctx.call_name(call)
        name = next((n for n in names if _PAYMENT_RESOURCES.match(n)), None)
        if name is None:
            collection = last_name(call.func.value)
            if collection not in _PAYMENT_COLLECTIONS:
                return None
            name = dotted_name(call.func) or f"{collection}.create"
        advice = "pass `idempotency_key=` made once per payment, before the retry"
        if any(a.star for a in call.args):
            return name, None, advice
        _, keywords = call_args(call)
        key = keywords.get("idempotency_key")
        if key is None:
            options = _dict_keys(keywords.get("options"), ctx) if "options" in keywords else {}
            if options is None:
                return name, None, advice
            key = options.get("idempotency_key")
        if key is None:
            return name, False, advice
        fresh = _generated(key, ctx, region)
        if fresh:
            return name, False, _fresh_advice("idempotency_key", fresh)
        return name, True, advice

    def _sql(self, call: cst.Call, region: cst.CSTNode) -> Optional[Tuple[str, Optional[bool], str]]:
        method = last_name(call.func)
        ctx = self.ctx
        positional, keywords = call_args(call)
        if method in ("create", "bulk_create") and isinstance(call.func, cst.Attribute) and last_name(call.func.value) == "objects":
            if method == "bulk_create" and ({"ignore_conflicts", "update_conflicts"} & set(keywords)):
                return None
            return f"Django `{dotted_name(call.func) or method}`", False, (
                "look the row up by its business key first (`get_or_create`/`update_or_create`) or give it a unique key"
            )
        if method == "add" and self._orm_add(call, region):
            return f"SQLAlchemy `{ctx.code(call.func)}({_short(ctx.code(positional[0]), 40)})` + `commit()`", False, (
                "look the row up by its business key first (or give it a unique key and skip it when it exists: "
                "`INSERT … ON CONFLICT DO NOTHING`), so that a commit whose answer was lost is not added again"
            )
        if method not in _SQL_METHODS or not positional:
            return None
        statement = positional[0]
        text = _string_text(statement, ctx)
        advice = "make the INSERT an upsert on a business key (`ON CONFLICT (key) DO NOTHING`) or check for the row first"
        if text is not None:
            if not _INSERT.search(text) or _UPSERT.search(text):
                return None
            return "SQL INSERT", False, advice
        built = resolve(statement, ctx)
        if isinstance(built, cst.Call):
            chain = _chain(built)
            heads = [c for c in chain if ctx.call_name(c) & {"sqlalchemy.insert", "sqlalchemy.sql.insert",
                                                           "sqlalchemy.sql.expression.insert",
                                                           "sqlalchemy.dialects.postgresql.insert",
                                                           "sqlalchemy.dialects.mysql.insert",
                                                           "sqlalchemy.dialects.sqlite.insert"}]
            if heads and not any(last_name(c.func) in _SAFE_INSERT_CHAIN or _prefix_ignores(c, ctx) for c in chain):
                return "SQL INSERT (SQLAlchemy `insert`)", False, advice
        return None

    def _orm_add(self, call: cst.Call, region: cst.CSTNode) -> bool:
        """``session.add(Order(...))`` followed by ``session.commit()`` in the attempt, on a SQLAlchemy
        session (``Session(engine)``, a ``sessionmaker()`` session, Flask-SQLAlchemy's ``db.session``):
        a new row per attempt. An object loaded before (``session.add(order)``) is an update."""
        ctx = self.ctx
        if not isinstance(call.func, cst.Attribute):
            return False
        positional, keywords = call_args(call)
        if len(positional) != 1 or keywords or not isinstance(positional[0], cst.Call):
            return False
        model = last_name(positional[0].func) or ""
        if not model[:1].isupper():
            return False  # not a model constructor
        receiver = dotted_name(call.func.value)
        if receiver is None or not self._orm_session(call.func.value):
            return False
        begins = ctx.location(call)
        for node in walk(region, skip=DEFERRED + (cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)):
            if (isinstance(node, cst.Call) and last_name(node.func) == "commit" and isinstance(node.func, cst.Attribute)
                    and dotted_name(node.func.value) == receiver and ctx.location(node).line >= begins.end_line):
                return True
        return False

    def _orm_session(self, receiver: cst.BaseExpression) -> bool:
        ctx = self.ctx
        if dotted_name(receiver) in ("db.session", "self.db.session"):
            return self._imports("flask_sqlalchemy", "sqlalchemy")
        for origin in self._origins(receiver):
            if isinstance(origin, cst.Call):
                names = ctx.call_name(origin)
                if any(n.startswith("sqlalchemy.") for n in names):
                    return True  # Session(engine), sessionmaker(...)() through a name
                inner = origin.func
                if isinstance(inner, (cst.Name, cst.Attribute)):
                    for made in self._origins(inner):
                        if isinstance(made, cst.Call) and any(n.startswith("sqlalchemy.") for n in ctx.call_name(made)):
                            return True  # SessionLocal = sessionmaker(...); session = SessionLocal()
            elif any(n.startswith("sqlalchemy.") for n in ctx.qualified_names(origin)):
                return True  # a parameter annotated ``session: Session``
        return False

    def _imports(self, *packages: str) -> bool:
        for node in walk(self.ctx.module, skip=()):
            if isinstance(node, cst.Import) and any((dotted_name(a.name) or "").split(".")[0] in packages for a in node.names):
                return True
            if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative and \
                    (dotted_name(node.module) or "").split(".")[0] in packages:
                return True
        return False

    def _dynamodb(self, call: cst.Call, region: cst.CSTNode) -> Optional[Tuple[str, Optional[bool], str]]:
        if last_name(call.func) != "put_item" or not isinstance(call.func, cst.Attribute):
            return None
        _, keywords = call_args(call)
        if any(a.star for a in call.args) or "ConditionExpression" in keywords or "Expected" in keywords:
            return None
        fresh = _generated(keywords.get("Item"), self.ctx, region)
        if not fresh:
            return None  # the same item put again is an overwrite: a repeat leaves it as it was
        return ("DynamoDB `put_item`", False,
                f"the item holds `{fresh}`, made anew on each attempt, so every retry writes a new item: make it once, "
                "before the retry, or add `ConditionExpression=\"attribute_not_exists(pk)\"`")

    def _fifo(self, call: cst.Call, region: cst.CSTNode) -> Optional[Tuple[str, Optional[bool], str]]:
        method = last_name(call.func)
        if method != "send_message":
            return None
        ctx = self.ctx
        _, keywords = call_args(call)
        url = _string_text(keywords.get("QueueUrl"), ctx)
        if url is None:
            url_expr = keywords.get("QueueUrl")
            url = ctx.code(url_expr) if url_expr is not None else ""
        if not re.search(r"\.fifo\b|_fifo\b|fifo_", url, re.I) or any(a.star for a in call.args):
            return None
        dedup = keywords.get("MessageDeduplicationId")
        if dedup is not None:
            fresh = _generated(dedup, ctx, region)
            if fresh:
                return "SQS FIFO `send_message`", False, _fresh_advice("MessageDeduplicationId", fresh)
            return None
        fresh = _generated(keywords.get("MessageBody"), ctx, region)
        if fresh:
            return ("SQS FIFO `send_message`", False,
                    f"with no `MessageDeduplicationId` SQS deduplicates on the body, which holds `{fresh}`, made anew on "
                    "each attempt: pass a `MessageDeduplicationId` made once per message, before the retry")
        return None

    def rolled_back(self, call: cst.Call, region: cst.CSTNode) -> bool:
        """A database create inside ``with transaction.atomic():`` (or ``session.begin()``) that ends
        the attempt: a failed attempt rolls the row back with everything else, so the retry does
        not duplicate it. (An HTTP call in the block is not rolled back.)"""
        if last_name(call.func) in ("post", "patch", "request", "put_item", "send_message", "create") and not (
            isinstance(call.func, cst.Attribute) and last_name(call.func.value) == "objects"
        ):
            return False
        block = None
        for ancestor in self.ctx.ancestors(call):
            if ancestor is region:
                break
            if isinstance(ancestor, cst.With) and any(
                isinstance(unwrap_await(item.item), cst.Call) and last_name(unwrap_await(item.item).func) in ("atomic", "begin", "transaction")  # type: ignore[union-attr]
                for item in ancestor.items
            ):
                block = ancestor
        if block is None:
            return False
        # Nothing of the attempt may run after the transaction block.
        current: cst.CSTNode = block
        for ancestor in self.ctx.ancestors(block):
            if isinstance(ancestor, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                body = list(ancestor.body)
                if current in body and body.index(current) != len(body) - 1:
                    following = body[body.index(current) + 1:]
                    if not all(isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, cst.Return) for x in s.body)
                               for s in following):
                        return False
            if ancestor is region:
                return True
            if isinstance(ancestor, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                continue
            current = ancestor
        return True

    def records_attempt(self, call: cst.Call, policy: RetryPolicy, region: cst.CSTNode) -> bool:
        """A create whose arguments carry the attempt number (``is_retry=self.request.retries > 0``,
        ``attempt=attempt``) records each attempt on purpose: one row per attempt is the intent."""
        counters = {"self.request.retries", "task.request.retries", "request.retries"}
        if policy.source == "loop" and isinstance(policy.anchor, cst.For):
            target = dotted_name(policy.anchor.target)
            if target:
                counters.add(target)
        for arg in call.args:
            for node in walk(arg.value, skip=DEFERRED):
                if dotted_name(node) in counters:
                    return True
        return False

    # ------------------------------------------------------------ urllib3

    def adapter_regions(self, policies: Sequence[RetryPolicy]) -> List[Tuple[RetryPolicy, List[cst.Call]]]:
        """POST/PATCH calls on sessions mounted with a urllib3 ``Retry`` that re-sends POST."""
        out = []
        for policy in policies:
            if policy.source not in ("urllib3", "requests") or not isinstance(policy.anchor, cst.Call):
                continue
            retry = policy.anchor if self._is_retry_call(policy.anchor) else None
            if retry is None or not _resends_post(retry, self.ctx):
                continue
            sessions = self._mounted_sessions(retry)
            if not sessions:
                continue
            calls = []
            for node in walk(self.ctx.module, skip=()):
                if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                        and dotted_name(node.func.value) in sessions and self._http_method(node)):
                    calls.append(node)
            if calls:
                out.append((policy, calls))
        return out

    def _is_retry_call(self, call: cst.Call) -> bool:
        return last_name(call.func) == "Retry" or any(n.endswith(".Retry") for n in self.ctx.call_name(call))

    def _mounted_sessions(self, retry: cst.Call) -> Set[str]:
        """Names of sessions given an adapter that uses ``retry``: ``s.mount("https://", HTTPAdapter(max_retries=retry))``."""
        ctx = self.ctx
        out: Set[str] = set()
        for node in walk(ctx.module, skip=()):
            if not (isinstance(node, cst.Call) and last_name(node.func) == "mount" and isinstance(node.func, cst.Attribute)):
                continue
            positional, keywords = call_args(node)
            adapter = resolve(keywords.get("adapter") or (positional[1] if len(positional) > 1 else None), ctx)
            if not isinstance(adapter, cst.Call) or last_name(adapter.func) != "HTTPAdapter":
                continue
            a_pos, a_kw = call_args(adapter)
            given = resolve(a_kw.get("max_retries") or (a_pos[2] if len(a_pos) > 2 else None), ctx)
            if given is retry:
                name = dotted_name(node.func.value)
                if name:
                    out.add(name)
        return out


def _resends_post(retry: cst.Call, ctx: ModuleContext) -> bool:
    """Does this urllib3 ``Retry`` re-send a POST after the server may have seen it?"""
    _, keywords = call_args(retry)
    methods = keywords.get("allowed_methods", keywords.get("method_whitelist"))
    if methods is None:
        return False  # the default allowed_methods has no POST
    resolved = resolve(methods, ctx)
    if isinstance(resolved, cst.Name) and resolved.value in ("None", "False"):
        allows = True  # every method
    else:
        allows = any(_string_text(s, ctx) in ("POST", "PATCH") for s in walk(resolved or methods, skip=())
                     if isinstance(s, (cst.SimpleString, cst.Name)) and _string_text(s, ctx) is not None)
    if not allows:
        return False
    positional, _ = call_args(retry)
    total = keywords.get("total") or (positional[0] if positional else None)
    if total is not None and (number(resolve(total, ctx)) == 0 or (isinstance(resolve(total, ctx), cst.Name)
                                                                   and resolve(total, ctx).value == "False")):
        return False
    read = keywords.get("read")
    read_zero = read is not None and number(resolve(read, ctx)) == 0
    status_list = keywords.get("status_forcelist")
    status = keywords.get("status")
    status_zero = status is not None and number(resolve(status, ctx)) == 0
    resends_on_status = status_list is not None and not status_zero and not (
        isinstance(resolve(status_list, ctx), cst.Name) and resolve(status_list, ctx).value == "None")  # type: ignore[union-attr]
    return not read_zero or resends_on_status


def _chain(call: cst.Call) -> List[cst.Call]:
    """``insert(t).values(x).on_conflict_do_nothing()`` → every call of the chain."""
    out = []
    current: cst.BaseExpression = call
    while isinstance(current, cst.Call):
        out.append(current)
        current = current.func.value if isinstance(current.func, cst.Attribute) else None  # type: ignore[assignment]
    return out


def _prefix_ignores(call: cst.Call, ctx: ModuleContext) -> bool:
    if last_name(call.func) != "prefix_with":
        return False
    positional, _ = call_args(call)
    return any(re.search(r"IGNORE|REPLACE", _string_text(p, ctx) or "", re.I) for p in positional)


#: A URL whose last path segment we can read (``/orders``, ``{}/jobGroups``, ``/flows/{}/copy``), not
#: a hole (``{}/{}``, ``/api/{route}``): the last segment names what the POST does.
_KNOWN_PATH = re.compile(r"(?:^|/)[A-Za-z_][\w.-]*/?(?:$|\?)")
_SCHEME_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://[^/]*", re.I)


def _short(text: str, size: int = 60) -> str:
    text = " ".join(text.split())
    text = re.sub(r"^(?:\{\}/*)+", "…/", re.sub(r"(?<!:)//+", "/", text))  # urljoin(base, f"{v}/flows") → …/flows
    return text if len(text) <= size else text[: size - 1] + "…"


def _fresh_advice(key: str, fresh: str) -> str:
    return (f"its `{key}` is `{fresh}`, made anew on every attempt, so no two attempts share it: make the key once per "
            "operation, before the retry, and pass it in")


#: Failures raised before an HTTP request leaves the client: a retry of only these never re-sends
#: a request the server saw (``requests.ConnectionError`` is not one: it also covers a reset after
#: the write).
CONNECT_ONLY = frozenset({
    "requests.ConnectTimeout", "requests.exceptions.ConnectTimeout", "httpx.ConnectError", "httpx.ConnectTimeout",
    "httpx.PoolTimeout", "aiohttp.ClientConnectorError", "aiohttp.client_exceptions.ClientConnectorError",
    "urllib3.exceptions.NewConnectionError", "urllib3.exceptions.ConnectTimeoutError", "ConnectionRefusedError",
    "socket.gaierror",
})


def _connect_only(policy: RetryPolicy) -> bool:
    from ..model import CatchKind

    return bool(policy.errors) and all(
        e.kind is CatchKind.NAMED and e.names and all(n in CONNECT_ONLY for n in e.names) for e in policy.errors
    )


def extract(ctx: ModuleContext, policies: Sequence[RetryPolicy]) -> List[RetriedCreate]:
    if not policies:
        return []  # nothing is retried
    creates = _Creates(ctx)
    out: List[RetriedCreate] = []
    seen: Set[int] = set()
    for policy in policies:
        if policy.bound.never_retries:
            continue
        if _connect_only(policy):
            continue  # the request never reached the server when the retry runs
        if not policy.errors and policy.statuses is not None and policy.statuses.statuses \
                and set(policy.statuses.statuses) <= {429}:
            continue  # only a 429 goes round: the server refused the request, it applied nothing
        for region in creates.regions(policy):
            for call in creates.calls_in(region):
                if id(call) in seen:
                    continue
                found = creates.classify(call, region)
                if found is None or creates.rolled_back(call, region) or creates.records_attempt(call, policy, region):
                    continue
                seen.add(id(call))
                out.append(_site(ctx, call, policy, *found))
    for policy, calls in creates.adapter_regions(policies):
        for call in calls:
            if id(call) in seen:
                continue
            found = creates._http(call, ctx.module)
            if found is None:
                continue
            seen.add(id(call))
            out.append(_site(ctx, call, policy, *found, adapter=True))
    return out


def _site(ctx: ModuleContext, call: cst.Call, policy: RetryPolicy, operation: str, keyed: Optional[bool], advice: str,
          adapter: bool = False) -> RetriedCreate:
    location = ctx.location(call)
    attempts = policy.bound.attempts
    times = f"up to {int(attempts)} times" if known(attempts) else "again and again" if policy.bound.unbounded else "again"  # type: ignore[arg-type]
    what = f"{policy.description or policy.source} (line {policy.location.line})"
    if adapter:
        what = f"the session's urllib3 `Retry(...)` (line {policy.location.line}), with POST in `allowed_methods`,"
    retry = f"{what} runs it {times}"
    statement = ctx.statement_of(call)
    lines = tuple(range(ctx.location(statement).line, location.end_line + 1)) if statement is not None else tuple(location.lines)
    return RetriedCreate(location=location, operation=operation, retry=retry, keyed=keyed, advice=advice,
                         header_lines=tuple(sorted(set(lines) | set(location.lines))), extent=location)


__all__ = ["extract", "KEY_NAME", "READ_ENDPOINT", "FRESH"]

"""The program view: values that a retry reads from somewhere other than its own function.

A retry's bound or delay is often not written where the retry is: ``time.sleep(self.delay)``
with ``self.delay = delay`` in ``__init__`` and ``delay=5`` as the parameter's default, a class
attribute, a dataclass field, ``from .config import MAX_RETRIES``, ``settings.RETRY_CAP`` on a
settings object whose class has a literal default. This module reads those facts from each
module's ``ast`` (cheap, and serialisable), follows imports to other modules of the checked tree
(on demand, a few hops deep), and hands the extractors a *literal*: only values that fold to a
constant are facts. Everything else stays unknown: never guess.

Every module read besides the checked one is a dependency of the file's result: the results
cache keeps each one's content digest and misses when any of them changes.
"""

from __future__ import annotations

import ast
import itertools
import hashlib
import http
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

from .classifiers import Classifier, read_classifier
from .model import TASK_QUEUE_SOURCES
from .summaries import CATCH_ALL, self_attributes_cleared, status_raise_kind, unique_nested_functions
from .syntax import ast_dotted_name as _dotted

if TYPE_CHECKING:
    from .model import RetryPolicy

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Calls whose ``default=`` (or first argument, for pydantic's ``Field``) is a field's value.
_FIELD_CALLS = {"field", "ib", "attrib", "Field"}
_TIMEDELTA_UNITS = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0, "milliseconds": 0.001,
                    "microseconds": 1e-6, "weeks": 604800.0}
#: How many imports/bases a value may be followed through.
_HOPS = 4
_MISSING = object()
#: Calls that build a collection from a literal one.
_COLLECTIONS = frozenset({"frozenset", "set", "tuple", "list"})
#: Method names of builtin types: ``obj.get(...)`` may be a dict's, not the method asked about.
_BUILTIN_METHODS = frozenset(
    name for kind in (dict, list, str, bytes, set, tuple, int, float, object) for name in dir(kind)
) | {"read", "write", "close", "open", "send", "recv", "connect", "run", "start", "stop", "get", "post",
     "put", "request", "fetch", "execute", "call", "wait", "join", "flush", "seek", "submit", "result"}

#: :meth:`Program.arguments_for`: a call that leaves the parameter to its default, or passes
#: something we cannot read.
DEFAULT = object()
UNREAD = object()


@dataclass(frozen=True)
class Value:
    """A literal found away from its use, and where it was found (for ``explain``)."""

    value: Any  # int | float | str | bool | None | tuple of these
    origin: str  # ``Client.delay``, ``config.MAX_RETRIES``
    path: str  # the file that holds it (as shown to the user)
    line: int
    #: For a helper: what it computes, shown instead of ``= value``.
    shown: Optional[str] = None

    @property
    def text(self) -> str:
        return repr(self.value)

    def describe(self) -> str:
        return f"{self.origin} = {self.text} ({self.path}:{self.line})"


@dataclass
class ClassFacts:
    name: str
    bases: Tuple[str, ...]  # as written: ``Base``, ``base.Base``
    #: attribute → its only value (class body, dataclass field, or ``self.x = …`` once)
    values: Dict[str, Tuple[Any, int, str]] = field(default_factory=dict)
    #: attributes assigned more than once or to something not constant: unknown
    unknown: set = field(default_factory=set)
    #: the class's own methods
    methods: set = field(default_factory=set)
    #: attribute → the ``__init__`` parameter whose default it holds
    from_parameters: Dict[str, str] = field(default_factory=dict)
    #: ``__init__`` parameter → its position after ``self`` (for positional callers)
    positions: Dict[str, int] = field(default_factory=dict)
    #: attribute → the method it holds, set once in ``__init__`` (``self._backoff_fn = backoff_fn
    #: or self.backoff`` with ``backoff_fn=None``); dropped when a caller here passes the parameter
    held: Dict[str, str] = field(default_factory=dict)
    #: attribute → the default that switches its feature off (``self.retries = retries`` with
    #: ``retries=1``; a field ``num_attempts: int = 1``), which :func:`_unless_off` keeps out of
    #: ``values``: it decides only where no caller anywhere can pass another value
    off_defaults: Dict[str, Tuple[Any, int, str]] = field(default_factory=dict)
    #: annotated names of the class body, in order: a dataclass's or NamedTuple's fields
    fields: Tuple[str, ...] = ()
    #: attribute → the settings object ``__init__`` builds for it once (``self.wait_config =
    #: WaitConfig(sleep, backoff, retries)``): the class called, its positional and keyword
    #: arguments (each a literal, an ``__init__`` parameter's default, or unknown), the line
    built: Dict[str, Tuple[str, Tuple[Any, ...], Dict[str, Any], int]] = field(default_factory=dict)
    #: attribute in ``built`` → the ``__init__`` parameters handed to the settings object
    built_from: Dict[str, frozenset] = field(default_factory=dict)
    #: attribute → the class its ``__init__`` parameter is annotated with (``self.config =
    #: config`` with ``config: Configuration``): its fields' defaults are the shipped values
    typed: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Helper:
    """A function whose job is a delay: it returns one (``return min(cap, base * 2 ** n)``) or
    sleeps one (``time.sleep(self.base * 2 ** attempt)``), written as one expression of its
    parameters (its locals and the module's constants folded in)."""

    params: Tuple[str, ...]  # ``self``/``cls`` left out for methods
    defaults: Tuple[Tuple[str, Any], ...]  # literal defaults
    returns: Optional[str]  # the returned expression
    sleeps: Optional[str]  # the delay of its one sleep
    line: int
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass(frozen=True)
class Wrapper:
    """``def _again(self, url): time.sleep(1); return self.fetch(url)``: a function that
    (maybe after a sleep) calls another one with its own parameters, unchanged."""

    target: str  # the function or method it calls back (its name)
    sleeps: Optional[str]  # the delay of its sleep, if it sleeps


@dataclass(frozen=True)
class PolicyFactory:
    """``def retry_pattern(wait_gen, exc, **kw): return backoff.on_exception(wait_gen, exc,
    jitter=None, **kw)``: a module function whose one ``return`` builds a retry decorator from its
    parameters. Another module's ``@retry_pattern(backoff.expo, ...)`` is judged with its values."""

    params: Tuple[str, ...]  # positional-or-keyword, in order
    keyword_only: Tuple[str, ...]
    defaults: Tuple[Tuple[str, str], ...]  # parameter -> its default as written
    kwargs: str  # the ``**kwargs`` parameter's name, or ""
    returns: str  # the returned call, the module's constants written in
    line: int


@dataclass
class ModuleFacts:
    path: str
    constants: Dict[str, Tuple[Any, int]] = field(default_factory=dict)
    #: local name → (absolute module, attribute or None for ``import module``)
    imports: Dict[str, Tuple[str, Optional[str]]] = field(default_factory=dict)
    #: the module's classes, read into :class:`ClassFacts` when first asked about (``classes``)
    class_nodes: Dict[str, Tuple[ast.ClassDef, int]] = field(default_factory=dict, repr=False)
    #: module-level ``settings = Settings()``: name → class name as written
    instances: Dict[str, str] = field(default_factory=dict)
    #: delay helpers: ``name`` or ``Class.name`` → what they compute
    helpers: Dict[str, "Helper"] = field(default_factory=dict)
    #: module-level names bound once to a dict or a call (``RETRY_KWARGS = {...}``,
    #: ``WAIT = wait_fixed(2)``) and never changed: its text (constants written in), line
    expressions: Dict[str, Tuple[str, int]] = field(default_factory=dict)
    #: pass-through wrappers: ``name`` or ``Class.name`` → what they call back
    wrappers: Dict[str, "Wrapper"] = field(default_factory=dict)
    #: status predicates (``_should_retry(response)``): ``name`` or ``Class.name`` → what they accept
    classifiers: Dict[str, Classifier] = field(default_factory=dict)
    #: functions that raise for a failed HTTP status: ``name`` or ``Class.name`` → ``"http"`` (they
    #: call ``raise_for_status()``) or ``"own"`` (they raise an error of their own for 4xx too)
    status_raisers: Dict[str, Tuple[str, int]] = field(default_factory=dict)
    #: bookkeeping functions that cannot wait (they only read, compute and log): ``name`` or
    #: ``Class.name`` → line; a failure handed to one is no hidden delay
    quiet: Dict[str, int] = field(default_factory=dict)
    #: functions that turn every failure into errors of their own (``try: … except Exception as
    #: e: raise TemporaryAKSKException(...)``): ``name`` or ``Class.name`` → (the exception
    #: classes that can leave, as written; line)
    converts: Dict[str, Tuple[Tuple[str, ...], int]] = field(default_factory=dict)
    #: retry-decorator factories: module function name → how it builds the decorator
    factories: Dict[str, PolicyFactory] = field(default_factory=dict)
    #: module functions with a retry-like decorator (``@retry(...)``, ``@backoff.on_exception``)
    #: → the lines of their decorators: what a caller elsewhere may retry around (RTY501)
    retried: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    #: the tree, kept until the classes are read: its calls may make ``__init__`` defaults
    #: unknown (a walk of every node of the module, paid only by a file that asks)
    pending: Optional[ast.Module] = field(default=None, repr=False, compare=False)
    _classes: Optional[Dict[str, ClassFacts]] = field(default=None, repr=False, compare=False)

    @property
    def classes(self) -> Dict[str, ClassFacts]:
        if self._classes is None:
            # each class with the constants bound before it (what its body can see; constants
            # are only ever added, in order)
            self._classes = {name: _class_facts(node, dict(itertools.islice(self.constants.items(), known)))
                             for name, (node, known) in self.class_nodes.items()}
            tree, self.pending = self.pending, None
            if tree is not None:
                _forget_passed_parameters(tree, self)
        return self._classes

    def settled(self) -> "ModuleFacts":
        self.classes  # noqa: B018 - reading them settles them
        return self


# ---------------------------------------------------------------- literals


def fold(node: Optional[ast.AST], env: Dict[str, Tuple[Any, int]]) -> Any:
    """The constant value of an expression, or ``_MISSING``."""
    if node is None:
        return _MISSING
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, (int, float, str, bool, type(None))) else _MISSING
    if isinstance(node, ast.Name):
        found = env.get(node.id)
        return found[0] if found is not None else _MISSING
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = fold(node.operand, env)
        if _is_number(inner):
            return -inner if isinstance(node.op, ast.USub) else inner
        return _MISSING
    if isinstance(node, ast.BinOp):
        left, right = fold(node.left, env), fold(node.right, env)
        if isinstance(left, tuple) and isinstance(right, tuple) and isinstance(node.op, (ast.Add, ast.BitOr)):
            # ``BASE_STATUSES + (409,)``, ``RETRYABLE | {502}``: one collection of literals
            return left + tuple(v for v in right if v not in left) if isinstance(node.op, ast.BitOr) else left + right
        if not (_is_number(left) and _is_number(right)):
            return _MISSING
        try:
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                return left / right
            if isinstance(node.op, ast.FloorDiv):
                return left // right
            if isinstance(node.op, ast.Pow) and abs(right) <= 64:
                return left ** right
        except (ArithmeticError, ValueError):
            return _MISSING
        return _MISSING
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        # a set is kept as a tuple in its written order: only membership is ever asked of it
        items = tuple(fold(e, env) for e in node.elts)
        return _MISSING if any(i is _MISSING or isinstance(i, tuple) for i in items) else items
    if isinstance(node, ast.Attribute) and _dotted(node.value) in ("HTTPStatus", "http.HTTPStatus"):
        member = getattr(http.HTTPStatus, node.attr, None)
        return int(member) if isinstance(member, http.HTTPStatus) else _MISSING
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _COLLECTIONS
            and len(node.args) <= 1 and not node.keywords):
        # ``frozenset([500, 502])``, ``set()``: the literal collection inside
        inner = fold(node.args[0], env) if node.args else ()
        return inner if isinstance(inner, tuple) else _MISSING
    default = _setting_default(node) if isinstance(node, ast.Call) else None
    if default is not None:
        return fold(default, env)  # ``config.getint("core", "rpc-retry-wait", 30)``
    if isinstance(node, ast.Call) and _called_name(node.func) == "timedelta" and not node.args:
        total = 0.0
        for keyword in node.keywords:
            amount = fold(keyword.value, env)
            if keyword.arg not in _TIMEDELTA_UNITS or not _is_number(amount):
                return _MISSING
            total += amount * _TIMEDELTA_UNITS[keyword.arg]
        return total
    return _MISSING


#: A settings object read with a default: ``config.getint("core", "retries", 3)``,
#: ``settings.get("max_retries", 5)``, ``conf.getfloat("s", "wait", fallback=2.0)``.
_SETTINGS = re.compile(r"^_*(config|conf|cfg|configuration|settings|options|opts)$", re.IGNORECASE)
_SETTING_GETTERS = frozenset({"get", "getint", "getfloat", "getboolean", "get_int", "get_float", "get_bool"})


def _setting_default(call: ast.Call) -> Optional[ast.AST]:
    """The literal default a settings getter falls back to (what the package ships), when the
    keys are literal strings; None for anything else (``os.environ.get``, a computed key)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _SETTING_GETTERS):
        return None
    receiver = func.value
    name = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    if not _SETTINGS.match(name):
        return None
    keyword = next((k.value for k in call.keywords if k.arg in ("fallback", "default")), None)
    keys = call.args if keyword is not None else call.args[:-1]
    default = keyword if keyword is not None else (call.args[-1] if len(call.args) >= 2 else None)
    if default is None or not keys or not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
        return None
    return default if isinstance(default, (ast.Constant, ast.UnaryOp)) else None


def _is_literal(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_is_literal(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _called_name(func: ast.AST) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


# ---------------------------------------------------------------- one module's facts


def module_facts(tree: ast.Module, path: str, package: str) -> ModuleFacts:
    """``package`` is the module's own package (``a.b`` for ``a/b/c.py``), for relative imports."""
    facts = ModuleFacts(path)
    assigned: Dict[str, int] = {}
    for statement in tree.body:
        for name in _assigned_names(statement):
            assigned[name] = assigned.get(name, 0) + 1
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            base = _absolute(statement.module, statement.level, package)
            if base is None:
                continue
            for alias in statement.names:
                if alias.name != "*":
                    facts.imports[alias.asname or alias.name] = (base, alias.name)
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    facts.imports[alias.asname] = (alias.name, None)
                else:
                    top = alias.name.split(".")[0]
                    facts.imports[top] = (top, None)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            if isinstance(statement, ast.Assign) and len(statement.targets) != 1:
                continue
            if not isinstance(target, ast.Name) or assigned.get(target.id) != 1:
                continue
            value = fold(statement.value, facts.constants)
            if value is not _MISSING:
                facts.constants[target.id] = (value, statement.lineno)
            elif isinstance(statement.value, ast.Call) and not statement.value.args and not statement.value.keywords:
                called = _dotted(statement.value.func)
                if called:
                    facts.instances[target.id] = called
            if value is _MISSING and _policy_like(statement.value):
                try:
                    text = ast.unparse(_inline(statement.value, {}, facts.constants))
                except (ValueError, RecursionError):
                    text = ""
                if text:
                    facts.expressions[target.id] = (text, statement.lineno)
        elif isinstance(statement, ast.ClassDef):
            facts.class_nodes[statement.name] = (statement, len(facts.constants))
    if facts.class_nodes:
        facts.pending = tree
    if facts.expressions:
        _forget_changed_expressions(tree, facts)
    for statement in tree.body:
        if isinstance(statement, _FUNCTIONS):
            lines = tuple(d.lineno for d in statement.decorator_list if _retry_like(d))
            if lines:
                facts.retried[statement.name] = lines
            _note_helper(facts, statement.name, statement, method=False)
            _note_wrapper(facts, statement.name, statement, method=False)
            _note_classifier(facts, statement.name, statement, method=False)
            _note_status_raiser(facts, statement.name, statement)
            _note_converts(facts, statement.name, statement)
            _note_policy_factory(facts, statement)
        elif isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, _FUNCTIONS):
                    _note_helper(facts, f"{statement.name}.{member.name}", member,
                                 method=not _is_static(member))
                    _note_wrapper(facts, f"{statement.name}.{member.name}", member, method=not _is_static(member))
                    _note_classifier(facts, f"{statement.name}.{member.name}", member,
                                     method=not _is_static(member))
                    _note_status_raiser(facts, f"{statement.name}.{member.name}", member)
                    _note_converts(facts, f"{statement.name}.{member.name}", member)
    _note_nested_classifiers(tree, facts)
    _note_quiet(tree, facts)
    return facts


#: What a bookkeeping function may call and still never wait: builtins that look at values, data
#: methods of dicts, lists and strings, and logging.
_QUIET_BUILTINS = frozenset({
    "isinstance", "issubclass", "hasattr", "getattr", "setattr", "len", "str", "repr", "int", "float", "bool",
    "dict", "list", "tuple", "set", "frozenset", "type", "min", "max", "abs", "round", "sum", "any", "all",
    "sorted", "reversed", "enumerate", "zip", "map", "filter", "range", "format", "print", "id", "vars", "iter",
    "next", "divmod", "hash", "callable", "super",
})
_QUIET_METHODS = frozenset({
    "get", "items", "keys", "values", "append", "extend", "update", "pop", "setdefault", "copy", "insert",
    "remove", "add", "discard", "index", "count", "format", "join", "split", "rsplit", "strip", "lstrip",
    "rstrip", "lower", "upper", "startswith", "endswith", "replace", "encode", "decode", "json", "group",
    "match", "search", "fullmatch", "findall", "sub", "isoformat", "total_seconds", "debug", "info", "warning",
    "warn", "error", "exception", "critical", "log", "__init__",
})


def _note_quiet(tree: ast.Module, facts: ModuleFacts) -> None:
    """Functions and methods whose every call is a look at a value, a data method, logging, an
    exception or value built (a capitalised name), or another quiet function of this module."""
    bodies: Dict[str, Tuple[ast.AST, Optional[str]]] = {}
    for statement in tree.body:
        if isinstance(statement, _FUNCTIONS):
            bodies[statement.name] = (statement, None)
        elif isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, _FUNCTIONS):
                    bodies[f"{statement.name}.{member.name}"] = (member, statement.name)
    answers: Dict[str, bool] = {}

    def quiet(key: str, depth: int) -> bool:
        if key in answers:
            return answers[key]
        answers[key] = False  # a cycle (or too deep) is not proven quiet
        if depth > 4:
            return False
        func, owner = bodies[key]
        for node in ast.walk(func):
            if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom, ast.With, ast.AsyncWith, ast.AsyncFor,
                                 ast.While, ast.Lambda)) or isinstance(node, _FUNCTIONS) and node is not func:
                return False
            if not isinstance(node, ast.Call):
                continue
            callee = node.func
            if isinstance(callee, ast.Name):
                name = callee.id
                if name in bodies:
                    if not quiet(name, depth + 1):
                        return False
                elif not (name in _QUIET_BUILTINS or name[:1].isupper()):
                    return False
            elif isinstance(callee, ast.Attribute):
                receiver = callee.value.id if isinstance(callee.value, ast.Name) else None
                method = f"{owner}.{callee.attr}" if owner and receiver in ("self", "cls") else None
                if method is not None and method in bodies:
                    if not quiet(method, depth + 1):
                        return False
                elif not (callee.attr in _QUIET_METHODS or receiver in ("logger", "log", "logging", "LOGGER", "_logger",
                                                                         "_log", "LOG")):
                    return False
            else:
                return False
        answers[key] = True
        return True

    for key, (func, _) in bodies.items():
        if quiet(key, 0):
            facts.quiet[key] = func.lineno  # type: ignore[attr-defined]


#: Builtin exception classes by name, to read ``issubclass`` among them.
BUILTIN_EXCEPTIONS = {name: value for name, value in vars(__import__("builtins")).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}


def _note_converts(facts: ModuleFacts, key: str, func: ast.AST) -> None:
    escapes = _converted_errors(func)
    if escapes:
        facts.converts[key] = (escapes, func.lineno)  # type: ignore[attr-defined]


def _converted_errors(func: ast.AST) -> Tuple[str, ...]:
    """The exception classes that can leave a function whose work all runs in one ``try`` with a
    catch-all handler, every handler raising: its own ``raise Error(...)`` or a bare ``raise`` of
    the named classes it caught (esdk-obs's ``_do_temporary_aksk_request``, dashscope's
    ``_sync_upload_to_oss``). Empty when anything else may leave."""
    body = list(func.body)  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    tries = [st for st in body if isinstance(st, ast.Try)]
    if len(tries) != 1 or tries[0].finalbody:
        return ()
    attempt = tries[0]
    index = body.index(attempt)
    if any(isinstance(n, ast.Call) for st in body[:index] for n in ast.walk(st)):
        return ()  # work before the try may fail with anything
    if any(not isinstance(st, (ast.Return, ast.Pass)) or any(isinstance(n, ast.Call) for n in ast.walk(st))
           for st in body[index + 1:]):
        return ()
    if attempt.orelse and any(isinstance(n, ast.Call) for st in attempt.orelse for n in ast.walk(st)):
        return ()
    escapes: List[str] = []
    catch_all = False
    for handler in attempt.handlers:
        caught = [_dotted(t) for t in (handler.type.elts if isinstance(handler.type, ast.Tuple) else
                                       [handler.type] if handler.type is not None else [])]
        if handler.type is None or any((c or "").rsplit(".", 1)[-1] in CATCH_ALL for c in caught):
            catch_all = True
        last = handler.body[-1] if handler.body else None
        if not isinstance(last, ast.Raise) or any(isinstance(n, ast.Raise) for st in handler.body[:-1] for n in ast.walk(st)):
            return ()
        if last.exc is None:
            if handler.type is None or not caught or any(c is None or c.rsplit(".", 1)[-1] in CATCH_ALL for c in caught):
                return ()  # re-raising everything it caught: anything may leave
            escapes += [c for c in caught if c]
            continue
        raised = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
        name = _dotted(raised)
        if not name or not name.rsplit(".", 1)[-1][:1].isupper():
            return ()  # ``raise e``, ``raise self.error``: not a class we can name
        escapes.append(name)
    return tuple(dict.fromkeys(escapes)) if catch_all else ()


#: Retry decorators a factory may return, by the library its callee is imported from.
_FACTORY_CALLS = {"backoff": frozenset({"on_exception", "on_predicate"}), "tenacity": frozenset({"retry"})}


def _note_policy_factory(facts: ModuleFacts, func: ast.AST) -> None:
    """A module function whose one ``return`` builds a backoff/tenacity decorator from its
    parameters, none of them changed before (as :func:`~retrylint.extract.libraries.built.factory_of`
    asks of one in the module being checked)."""
    args = func.args  # type: ignore[attr-defined]
    if args.vararg is not None:
        return
    returns = []
    stack = list(func.body)  # type: ignore[attr-defined]
    while stack:  # its own statements: a nested ``def should_give_up(e): return …`` is not its return
        current = stack.pop()
        if isinstance(current, ast.Return):
            returns.append(current)
        elif not isinstance(current, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            stack.extend(c for c in ast.iter_child_nodes(current) if isinstance(c, (ast.stmt, ast.excepthandler)))
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Call):
        return
    call = returns[0].value
    callee = _dotted(call.func) or ""
    head, _, rest = callee.partition(".")
    imported = facts.imports.get(head)
    if imported is None:
        return
    library = imported[0].split(".")[0]
    last = (rest or imported[1] or "").rsplit(".", 1)[-1]
    if last not in _FACTORY_CALLS.get(library, ()):
        return
    params = tuple(p.arg for p in list(args.posonlyargs) + list(args.args))
    keyword_only = tuple(p.arg for p in args.kwonlyargs)
    kwargs = args.kwarg.arg if args.kwarg is not None else ""
    names = set(params) | set(keyword_only) | ({kwargs} if kwargs else set())
    if not any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(call)):
        return
    for node in ast.walk(func):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(isinstance(t, ast.Name) and t.id in names for t in targets):
            return  # a parameter changed before the return: not the value a use passes
    defaults = [(name, ast.unparse(default)) for name, default in _default_nodes(func)]
    try:
        text = ast.unparse(_inline(call, {}, facts.constants))
    except (ValueError, RecursionError):
        return
    facts.factories[func.name] = PolicyFactory(params, keyword_only, tuple(defaults), kwargs, text,  # type: ignore[attr-defined]
                                               call.lineno)


def _note_nested_classifiers(tree: ast.Module, facts: ModuleFacts) -> None:
    """Predicates defined inside a function (segment's ``is_retryable_status``), keyed as
    :func:`retrylint.summaries._functions` keys nested helpers."""
    outer = [f for f in tree.body if isinstance(f, _FUNCTIONS)] + [
        m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, _FUNCTIONS)]
    for name, inner in unique_nested_functions(tree, outer):
        _note_classifier(facts, name, inner, method=False)


def _note_status_raiser(facts: ModuleFacts, key: str, func: ast.AST) -> None:
    kind = status_raise_kind(func)
    if kind is not None:
        facts.status_raisers[key] = (kind, func.lineno)  # type: ignore[attr-defined]


def _note_classifier(facts: ModuleFacts, key: str, func: ast.AST, method: bool) -> None:
    found = read_classifier(func, method, facts.constants)
    if found is not None:
        facts.classifiers[key] = found


def _retry_like(decorator: ast.AST) -> bool:
    """``@retry``, ``@retry(...)``, ``@tenacity.retry(...)``, ``@backoff.on_exception(...)``,
    ``@stamina.retry(...)``: worth asking the extractors about (they decide what it is)."""
    name = _dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return "retry" in last or last in ("on_exception", "on_predicate")


_SLEEPS = {"sleep"}
_HELPER_NAMES = ("delay", "backoff", "sleep", "wait", "interval", "jitter", "retry", "pause", "timeout")


def _is_static(func: ast.AST) -> bool:
    return any(_called_name(d) == "staticmethod" or (isinstance(d, ast.Name) and d.id == "staticmethod")
               for d in func.decorator_list)  # type: ignore[attr-defined]


def _note_helper(facts: ModuleFacts, key: str, func: ast.AST, method: bool) -> None:
    """Straight-line functions only: locals assigned once, then one return or one sleep."""
    name = key.lower()  # ``ExponentialBackoff.compute`` says it in its class's name
    if not any(word in name for word in _HELPER_NAMES):
        return  # a delay helper says so in its name; anything else is not read as one
    body = list(func.body)  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    args = func.args  # type: ignore[attr-defined]
    positional = [a.arg for a in list(args.posonlyargs) + list(args.args)]
    if method and positional:
        positional = positional[1:]
    if args.vararg or args.kwarg:
        return
    params = tuple(positional + [a.arg for a in args.kwonlyargs])
    defaults: Dict[str, Any] = {}
    for name_, value in _parameter_defaults(func, facts.constants).items():
        if value is not _MISSING and name_ in params:
            defaults[name_] = value
    locals_: Dict[str, ast.AST] = {}
    returns: Optional[ast.AST] = None
    sleeps: Optional[ast.AST] = None
    for statement in body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            target = statement.targets[0].id
            if target in locals_ or target in params:
                return
            locals_[target] = _inline(statement.value, locals_, facts.constants)
        elif isinstance(statement, ast.Return) and statement.value is not None and returns is None:
            returns = _inline(statement.value, locals_, facts.constants)
            break
        elif isinstance(statement, ast.Expr) and sleeps is None and _sleep_arg(statement.value) is not None:
            sleeps = _inline(_sleep_arg(statement.value), locals_, facts.constants)  # type: ignore[arg-type]
        elif isinstance(statement, (ast.Expr, ast.Pass)) and not _has_call_named(statement, _SLEEPS):
            continue  # logging
        elif _gives_up_with_none(statement) and sleeps is None:
            continue  # ``if elapsed >= max_wait_time: return None``: the budget's end, the caller's bound
        else:
            return  # a branch, a loop, a second sleep: not one expression
    if returns is None and sleeps is None:
        return
    try:
        facts.helpers[key] = Helper(params, tuple(defaults.items()),
                                    ast.unparse(returns) if returns is not None else None,
                                    ast.unparse(sleeps) if sleeps is not None else None,
                                    func.lineno, func.col_offset,  # type: ignore[attr-defined]
                                    func.end_lineno or func.lineno, func.end_col_offset or 0)  # type: ignore[attr-defined]
    except (ValueError, RecursionError):
        return


def _gives_up_with_none(statement: ast.stmt) -> bool:
    """``if elapsed >= max_wait_time: return None`` in a delay helper (fireworks' ``_backoff_delay``)."""
    return isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1 \
        and isinstance(statement.body[0], ast.Return) and (
            statement.body[0].value is None
            or isinstance(statement.body[0].value, ast.Constant) and statement.body[0].value.value is None)


def _note_wrapper(facts: ModuleFacts, key: str, func: ast.AST, method: bool) -> None:
    body = list(func.body)  # type: ignore[attr-defined]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return
    returned = body[-1].value
    if isinstance(returned, ast.Await):
        returned = returned.value
    if not isinstance(returned, ast.Call):
        return
    target = returned.func
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"):
        if not method:
            return
        name = target.attr
    elif isinstance(target, ast.Name) and not method:
        name = target.id
    else:
        return
    args = func.args  # type: ignore[attr-defined]
    params = [a.arg for a in list(args.posonlyargs) + list(args.args)][1 if method else 0:]
    passed = [a.id if isinstance(a, ast.Name) else None for a in returned.args]
    passed += [k.value.id if k.arg and isinstance(k.value, ast.Name) and k.arg == k.value.id else None
               for k in returned.keywords]
    if None in passed or sorted(passed) != sorted(params):
        return  # it changes the input: another operation, not the same one again
    sleeps: Optional[str] = None
    for statement in body[:-1]:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue
        argument = _sleep_arg(statement.value) if isinstance(statement, ast.Expr) else None
        if argument is not None and sleeps is None:
            try:
                sleeps = ast.unparse(_inline(argument, {}, facts.constants))
            except (ValueError, RecursionError):
                return
        elif not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            return  # only logging and one sleep before the call back
    facts.wrappers[key] = Wrapper(name, sleeps)


def _sleep_arg(value: ast.AST) -> Optional[ast.AST]:
    if isinstance(value, ast.Await):
        value = value.value
    if isinstance(value, ast.Call) and _called_name(value.func) in _SLEEPS and len(value.args) == 1 \
            and not value.keywords:
        return value.args[0]
    return None


def _has_call_named(node: ast.AST, names: set) -> bool:
    return any(isinstance(n, ast.Call) and _called_name(n.func) in names for n in ast.walk(node))


def _inline(node: ast.AST, locals_: Dict[str, ast.AST], constants: Dict[str, Tuple[Any, int]]) -> ast.AST:
    """The expression with earlier locals and the module's constants written in."""

    class Inline(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            if isinstance(name.ctx, ast.Load):
                if name.id in locals_:
                    return locals_[name.id]
                if name.id in constants:
                    return ast.Constant(constants[name.id][0])
            return name

    import copy

    return Inline().visit(copy.deepcopy(node))


#: Keys of retry policies' keyword arguments (tenacity, backoff, urllib3, redis, google-api-core).
_POLICY_KEYS = {"stop", "wait", "retry", "max_tries", "max_time", "jitter", "giveup", "total", "backoff_factor",
                "backoff_max", "backoff_jitter", "status_forcelist", "retries", "backoff", "supported_errors",
                "initial", "maximum", "multiplier", "timeout", "deadline", "predicate", "connect", "read", "status"}


def _policy_like(value: ast.AST) -> bool:
    """A dict of a retry policy's arguments, or a call of a wait/stop strategy or policy."""
    if isinstance(value, ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value in _POLICY_KEYS for k in value.keys)
    if isinstance(value, ast.Call):
        name = _called_name(value.func) or ""
        if name == "dict":
            return any(k.arg in _POLICY_KEYS for k in value.keywords)
        return name.startswith(("wait_", "stop_", "retry_")) or name in ("Retry", "AsyncRetry") \
            or name.endswith("Backoff") or name in ("expo", "fibo", "constant")
    return False


_CHANGES = {"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove"}


def _forget_changed_expressions(tree: ast.Module, facts: ModuleFacts) -> None:
    """``RETRY_KWARGS["stop"] = …``, ``RETRY_KWARGS.update(…)``, ``global RETRY_KWARGS``
    anywhere in the module: its value is not the one written."""
    for node in ast.walk(tree):
        changed: Optional[str] = None
        if isinstance(node, ast.Global):
            for name in node.names:
                facts.expressions.pop(name, None)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            changed = node.value.id
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            changed = node.target.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CHANGES \
                and isinstance(node.func.value, ast.Name):
            changed = node.func.value.id
        if changed is not None:
            facts.expressions.pop(changed, None)


def _forget_passed_parameters(tree: ast.Module, facts: ModuleFacts) -> None:
    """An ``__init__`` default holds only where no caller here passes the parameter:
    ``IMDSFetcher(num_attempts=config_value)`` makes ``self._num_attempts`` unknown."""
    if not any(c.from_parameters or c.off_defaults or c.built for c in facts.classes.values()):
        return
    # One walk that knows the class each call is in (``super().__init__(…)`` below).
    # (node, class it is in, the functions around it, innermost first: a closure sees its
    # enclosing functions' parameters, ucloud's ``def step(..., max_retries=0)`` → ``def deco``)
    stack: List[Tuple[ast.AST, Optional[str], Tuple[ast.AST, ...]]] = [(tree, None, ())]
    while stack:
        node, owner, functions = stack.pop()
        inner = node.name if isinstance(node, ast.ClassDef) else owner
        inner_functions = (node, *functions) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else functions
        stack.extend((child, inner, inner_functions) for child in ast.iter_child_nodes(node))
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node.func)
        targets: List[ClassFacts] = []
        if name in facts.classes:
            targets.append(facts.classes[name])
        elif name == "__init__" and owner is not None:
            # ``super().__init__(num_attempts=…)`` in a subclass: its callers decide.
            own = facts.classes.get(owner)
            targets += [facts.classes[b] for b in (own.bases if own else ()) if b in facts.classes]
        for cls in targets:
            passed = {k.arg for k in node.keywords if not _hands_on_the_default(k, cls, functions)}
            everything = _unpacks_unknown(node, functions)
            for attribute, parameter in list(cls.from_parameters.items()):
                index = cls.positions.get(parameter)
                if everything or parameter in passed or (index is not None and index < len(node.args)):
                    cls.values.pop(attribute, None)
                    cls.off_defaults.pop(attribute, None)
                    cls.held.pop(attribute, None)
                    cls.unknown.add(attribute)
            for attribute, parameters in list(cls.built_from.items()):
                if everything or any(p in passed or (cls.positions.get(p) is not None and cls.positions[p] < len(node.args))
                                     for p in parameters):
                    cls.built.pop(attribute, None)  # a caller chooses the settings object's values
            for attribute, (_, _, how) in list(cls.off_defaults.items()):
                if how == "field default" and (everything or attribute in passed or node.args):
                    cls.off_defaults.pop(attribute)  # ``Config(retries=3)``: the caller decides


def _hands_on_the_default(keyword: ast.keyword, cls: ClassFacts, functions: Tuple[ast.AST, ...]) -> bool:
    """``Step(max_retries=max_retries)`` inside ``def step(self, ..., max_retries=0)`` while
    ``Step.__init__`` also defaults to 0 (ucloud's test scenario): the caller hands on its own
    parameter with the same default, so as shipped the class keeps its default."""
    attribute = next((a for a, p in cls.from_parameters.items() if p == keyword.arg), None)
    shipped = cls.off_defaults.get(attribute) or cls.values.get(attribute) if attribute is not None else None
    return shipped is not None and _hands_on_default(keyword.value, functions, shipped[0])


def _unpacks_unknown(call: ast.Call, functions: Tuple[ast.AST, ...]) -> bool:
    """``f(*items, **options)``: the call may pass anything. ``RdsDataApi(arn, **kwargs)`` in
    ``connect(arn, **kwargs)`` hands on what its own caller chose, so the defaults hold as the
    package ships them."""
    return any(k.arg is None and not _forwarded(k.value, functions, "kwarg") for k in call.keywords) or any(
        isinstance(a, ast.Starred) and not _forwarded(a.value, functions, "vararg") for a in call.args)


def _forwarded(value: ast.AST, functions: Tuple[ast.AST, ...], which: str) -> bool:
    """``**kwargs`` (``*args``) of an enclosing function itself, handed on unchanged."""
    for function in functions:
        own = getattr(function.args, which, None)  # type: ignore[attr-defined]
        if own is not None and isinstance(value, ast.Name) and value.id == own.arg:
            return True
    return False


def _parameter_names(function: ast.AST) -> set:
    args = function.args  # type: ignore[attr-defined]
    return {a.arg for a in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)}


def _assigned_names(statement: ast.stmt) -> List[str]:
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
        # Assigned in a branch: a value that depends on something (a platform, an import) is no constant.
        names = []
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names += [node.id, node.id]
        return names
    return []


def _absolute(module: Optional[str], level: int, package: str) -> Optional[str]:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base) if base else None


def _class_facts(node: ast.ClassDef, constants: Dict[str, Tuple[Any, int]]) -> ClassFacts:
    facts = ClassFacts(node.name, tuple(filter(None, (_dotted(_generic_origin(b)) for b in node.bases))))
    counts: Dict[str, int] = {}
    found: Dict[str, Tuple[Any, int]] = {}
    off: Dict[str, Tuple[Any, int, str]] = {}

    def note(name: str, value: Any, line: int, how: str) -> None:
        counts[name] = counts.get(name, 0) + 1
        if value is _MISSING:
            facts.unknown.add(name)
        else:
            found[name] = (value, line, how)

    built: Dict[str, Tuple[str, Tuple[Any, ...], Dict[str, Any], int]] = {}
    facts.fields = tuple(s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name))
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    note(target.id, fold(statement.value, constants), statement.lineno, "class attribute")
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            if statement.value is None:
                continue  # a declaration: ``__init__`` may give the value
            # A field is a constructor argument: a default that switches the retry off is not used.
            raw = _field_default(statement.value, constants)
            if _switches_off(raw):
                off[statement.target.id] = (raw, statement.lineno, "field default")
            note(statement.target.id, _unless_off(raw), statement.lineno, "field default")
        elif isinstance(statement, _FUNCTIONS):
            facts.methods.add(statement.name)
            defaults = _parameter_defaults(statement, constants) if statement.name == "__init__" else {}
            annotations: Dict[str, str] = {}
            if statement.name == "__init__":
                positional = list(statement.args.posonlyargs) + list(statement.args.args)
                facts.positions = {p.arg: i - 1 for i, p in enumerate(positional) if i > 0}
                annotations = _class_annotations(statement)
            for sub in _statements_in(statement):
                targets: List[ast.AST] = []
                value_node: Optional[ast.AST] = None
                if isinstance(sub, ast.Assign):
                    targets, value_node = list(sub.targets), sub.value
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                    targets, value_node = [sub.target], sub.value if not isinstance(sub, ast.AugAssign) else None
                for target in targets:
                    if isinstance(target, ast.Subscript) and _self_attribute(target.value):
                        # ``self._client_args["max_retries"] = …`` elsewhere: that key has two values
                        key = target.slice
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            note(_keyed(target.value.attr, key.value), _MISSING, sub.lineno, "")  # type: ignore[union-attr]
                        else:
                            note(target.value.attr, _MISSING, sub.lineno, "")  # type: ignore[union-attr]
                        continue
                    if isinstance(target, (ast.Tuple, ast.List)):
                        for element in target.elts:
                            if _self_attribute(element):
                                note(element.attr, _MISSING, sub.lineno, "")  # type: ignore[union-attr]
                        continue
                    if not _self_attribute(target):
                        continue
                    if statement.name != "__init__" or value_node is None:
                        note(target.attr, _MISSING, sub.lineno, "")  # type: ignore[union-attr]
                        continue
                    if statement.name == "__init__" and isinstance(value_node, ast.Dict):
                        # ``self._client_args = {"max_retries": max_retries, …}`` (quixstreams'
                        # TDengine sink): each literal key is a value of its own,
                        # ``self._client_args["max_retries"]``.
                        for key, item in zip(value_node.keys, value_node.values):
                            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                                item_value, item_how, item_parameter = _init_value(item, defaults, constants)
                                keyed = _keyed(target.attr, key.value)  # type: ignore[union-attr]
                                if item_parameter is not None:
                                    facts.from_parameters[keyed] = item_parameter
                                note(keyed, item_value, sub.lineno, item_how)
                    if isinstance(value_node, ast.Name) and value_node.id in annotations:
                        facts.typed[target.attr] = annotations[value_node.id]  # type: ignore[union-attr]
                    settings = _settings_object(_constructed_unless_given(value_node, defaults), defaults, constants)
                    if settings is not None:
                        built[target.attr] = settings + (sub.lineno,)  # type: ignore[union-attr]
                        facts.built_from[target.attr] = frozenset(  # type: ignore[union-attr]
                            n.id for n in ast.walk(value_node) if isinstance(n, ast.Name) and n.id in defaults)
                    value, how, parameter = _init_value(value_node, defaults, constants)
                    if parameter is not None:
                        facts.from_parameters[target.attr] = parameter  # type: ignore[union-attr]
                        if isinstance(value_node, ast.Name) and _switches_off(defaults.get(parameter)):
                            off[target.attr] = (defaults[parameter], sub.lineno, how)  # type: ignore[union-attr]
                    method = _method_reference(value_node, defaults)
                    if method is not None:
                        facts.held[target.attr] = method  # type: ignore[union-attr]
                    note(target.attr, value, sub.lineno, how)  # type: ignore[union-attr]
    for name, count in counts.items():
        base = name.split("[", 1)[0]
        if count == 1 and name in found and name not in facts.unknown and counts.get(base, 1) == 1:
            facts.values[name] = found[name]
        else:
            facts.unknown.add(name)
    facts.held = {name: method for name, method in facts.held.items() if counts.get(name) == 1}
    facts.off_defaults = {name: value for name, value in off.items() if counts.get(name) == 1}
    facts.built = {name: found for name, found in built.items() if counts.get(name) == 1}
    facts.typed = {name: cls for name, cls in facts.typed.items() if counts.get(name) == 1}
    return facts


def _class_annotations(init: ast.AST) -> Dict[str, str]:
    """``__init__`` parameters annotated with a class (``config: Configuration``,
    ``Optional[Config]``, ``Config | None``), by the class's dotted name."""
    out: Dict[str, str] = {}
    args = init.args  # type: ignore[attr-defined]
    for param in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs):
        annotation = param.annotation
        if isinstance(annotation, ast.Subscript) and _dotted(annotation.value) in ("Optional", "typing.Optional"):
            annotation = annotation.slice
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            sides = [a for a in (annotation.left, annotation.right)
                     if not (isinstance(a, ast.Constant) and a.value is None)]
            annotation = sides[0] if len(sides) == 1 else None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body  # ``config: "Configuration"``
            except SyntaxError:
                annotation = None
        name = _dotted(annotation) if annotation is not None else None
        if name and name.rpartition(".")[2][:1].isupper() and name.rpartition(".")[2] not in _NOT_SETTINGS:
            out[param.arg] = name
    return out


#: Annotations that name a value, not a settings class.
_NOT_SETTINGS = frozenset({"Any", "Dict", "List", "Mapping", "MutableMapping", "Callable", "Sequence", "Tuple",
                           "Set", "FrozenSet", "Iterable", "Type", "Union", "Optional", "Awaitable"})


def _when_not_given(value: ast.AST, defaults: Dict[str, Any]) -> Optional[Tuple[str, ast.AST]]:
    """``param or X`` and ``X if param is None else param`` with ``param=None``: the parameter,
    and the value used when the caller leaves it out."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and len(value.values) == 2:
        first, second = value.values
        if isinstance(first, ast.Name) and defaults.get(first.id, _MISSING) is None:
            return first.id, second
    if isinstance(value, ast.IfExp) and isinstance(value.test, ast.Compare) and len(value.test.ops) == 1:
        subject = value.test.left
        if (isinstance(subject, ast.Name) and defaults.get(subject.id, _MISSING) is None
                and isinstance(value.test.comparators[0], ast.Constant) and value.test.comparators[0].value is None):
            return subject.id, value.body if isinstance(value.test.ops[0], ast.Is) else value.orelse
    return None


def _constructed_unless_given(value: ast.AST, defaults: Dict[str, Any]) -> ast.AST:
    """``config or Config()`` and ``Config() if config is None else config`` with ``config=None``:
    the object built when the caller passes none, as the package ships it."""
    found = _when_not_given(value, defaults)
    return found[1] if found is not None and isinstance(found[1], ast.Call) else value


def _keyed(attribute: str, key: str) -> str:
    """The name a literal key of a dict attribute is known by: ``_client_args['max_retries']``."""
    return f"{attribute}[{key!r}]"


def _settings_object(value: ast.AST, defaults: Dict[str, Any],
                     constants: Dict[str, Tuple[Any, int]]) -> Optional[Tuple[str, Tuple[Any, ...], Dict[str, Any]]]:
    """``WaitConfig(sleep, backoff, 30)`` in ``__init__``: the class called and what each argument
    holds (a literal, a parameter's default, or :data:`_MISSING`)."""
    if not isinstance(value, ast.Call) or any(isinstance(a, ast.Starred) for a in value.args):
        return None
    called = _dotted(value.func)
    if not called or not called.rpartition(".")[2][:1].isupper():
        return None  # a class by its name; a factory function's result is not read

    def held(argument: ast.AST) -> Any:
        if isinstance(argument, ast.Name) and argument.id in defaults:
            return _unless_off(defaults[argument.id])
        return fold(argument, constants)

    keywords = {k.arg: held(k.value) for k in value.keywords if k.arg is not None}
    if any(k.arg is None for k in value.keywords):
        return None  # ``**kwargs``: any field may be set
    return called, tuple(held(a) for a in value.args), keywords


def _generic_origin(base: ast.expr) -> ast.expr:
    """``BaseClient[httpx.Client, Stream[Any]]`` is ``BaseClient``."""
    return base.value if isinstance(base, ast.Subscript) else base


def _statements_in(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and every statement nested in it, without walking expressions (assignments
    are statements; a method's expressions are most of its nodes)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                stack.append(child)


def _self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _field_default(value: ast.AST, constants: Dict[str, Tuple[Any, int]]) -> Any:
    if isinstance(value, ast.Call) and _called_name(value.func) in _FIELD_CALLS:
        for keyword in value.keywords:
            if keyword.arg == "default":
                return fold(keyword.value, constants)
        if _called_name(value.func) == "Field" and value.args:
            return fold(value.args[0], constants)
        return _MISSING
    return fold(value, constants)


def _default_nodes(func: ast.AST) -> Iterator[Tuple[str, ast.expr]]:
    """Each parameter that has a default, with the default as written."""
    args = func.args  # type: ignore[attr-defined]
    positional = list(args.posonlyargs) + list(args.args)
    for param, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        yield param.arg, default
    for param, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None:
            yield param.arg, default


def _parameter_defaults(func: ast.AST, constants: Dict[str, Tuple[Any, int]]) -> Dict[str, Any]:
    args = func.args  # type: ignore[attr-defined]
    out: Dict[str, Any] = {name: fold(default, constants) for name, default in _default_nodes(func)}
    for param in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs):
        out.setdefault(param.arg, _MISSING)  # a required parameter: whatever the caller passes
    return out


def _init_value(value: ast.AST, defaults: Dict[str, Any],
                constants: Dict[str, Tuple[Any, int]]) -> Tuple[Any, str, Optional[str]]:
    """``self.x = <literal>``, ``self.x = param`` (its default), ``self.x = param or 5`` and
    ``5 if param is None else param`` with ``param=None``."""
    if isinstance(value, ast.Name) and value.id in defaults:
        return _unless_off(defaults[value.id]), f"default of __init__ parameter {value.id}", value.id
    found = _when_not_given(value, defaults)
    if found is not None:
        parameter, chosen = found
        return _unless_off(fold(chosen, constants)), f"default of __init__ parameter {parameter}", parameter
    got = _option_get(value, defaults)
    if got is not None:
        holder, key, default = got
        return _unless_off(fold(default, constants)), f"default of {holder}.get({key!r}) in __init__", None
    if any(isinstance(n, ast.Name) and n.id in defaults for n in ast.walk(value)):
        return _MISSING, "", None
    return fold(value, constants), "set in __init__", None


def _option_get(value: ast.AST, defaults: Dict[str, Any]) -> Optional[Tuple[str, str, ast.AST]]:
    """``config_dict.get("num_retries", 3)`` on an ``__init__`` parameter (an options dict or
    ``**kwargs``): the value a caller gets by leaving the key out."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
            and isinstance(value.func.value, ast.Name) and value.func.value.id in defaults
            and len(value.args) == 2 and not value.keywords):
        return None
    key = value.args[0]
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    return value.func.value.id, key.value, value.args[1]


def _method_reference(value: ast.AST, defaults: Dict[str, Any]) -> Optional[str]:
    """``self.backoff``, or ``param or self.backoff`` with ``param=None``: the method named."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and len(value.values) == 2:
        first, value = value.values
        if not (isinstance(first, ast.Name) and defaults.get(first.id, _MISSING) is None):
            return None
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return value.attr
    return None


def _switches_off(value: Any) -> bool:
    """0 or 1 attempts/retries: the values :func:`_unless_off` keeps out (not None, which may
    mean "no limit")."""
    return isinstance(value, int) and not isinstance(value, bool) and value in (0, 1)


def _unless_off(value: Any) -> Any:
    """A parameter defaulting to 0, 1 or None usually switches a feature off (``num_attempts=1``,
    ``retries=None``); the retry written for those who switch it on must still be judged."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value in (0, 1)):
        return _MISSING
    return value


# ---------------------------------------------------------------- the program


#: (package folder, name) -> the files of the package that mention the name (None: too many files).
_MENTIONS: Dict[Tuple[str, str], Optional[List[str]]] = {}
_MENTION_FILES = 3000


def _files_mentioning(top: Path, name: str, recursive: bool) -> Optional[List[str]]:
    pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
    files = top.rglob("*.py") if recursive else top.glob("*.py")
    found = []
    for count, file in enumerate(files):
        if count >= _MENTION_FILES:
            return None
        try:
            if pattern.search(file.read_bytes()):
                found.append(str(file))
        except OSError:
            continue
    return found


#: (file, digest, class, parameter) -> does the file pass the parameter (:func:`_passes`)?
_PASSES: Dict[Tuple[str, str, str, str, Optional[int]], bool] = {}


def _calls_with_their_function(tree: ast.Module) -> Iterator[Tuple[ast.Call, Tuple[ast.AST, ...]]]:
    """Each call with the functions around it, innermost first."""
    stack: List[Tuple[ast.AST, Tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, functions = stack.pop()
        inner = (node, *functions) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else functions
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            yield node, functions


def _hands_on_default(value: ast.AST, functions: Tuple[ast.AST, ...], default: Any) -> bool:
    """``run(restart_on_failure=restart_on_failure)`` in a CLI command whose own parameter
    defaults to the same value (``typer.Option(False, "--restart-on-failure")``): as shipped,
    the callee gets its default. The parameter may be one of an enclosing function (a
    decorator factory's ``def step(..., max_retries=0)`` seen from its ``def deco``)."""
    if default is _MISSING or not isinstance(value, ast.Name):
        return False
    function = next((f for f in functions if value.id in _parameter_names(f)), None)
    if function is None:
        return False
    own = _parameter_defaults(function, {})
    if value.id not in own:
        return False
    given = own[value.id]
    if given is _MISSING:
        given = _option_default(function, value.id)
    return given is not _MISSING and given == default and type(given) is type(default)


#: ``typer.Option(False, ...)``, ``typer.Argument(3)``: a command-line option's default.
_OPTION_CALLS = frozenset({"Option", "Argument"})


def _option_default(function: ast.AST, name: str) -> Any:
    for param, default in _default_nodes(function):
        if param == name and isinstance(default, ast.Call) and \
                (_dotted(default.func) or "").rpartition(".")[2] in _OPTION_CALLS and default.args:
            return fold(default.args[0], {})
    return _MISSING


def _passes(file: Path, name: str, parameter: str, position: Optional[int], default: Any = _MISSING) -> bool:
    try:
        data = file.read_bytes()
    except OSError:
        return True  # unreadable: assume it may
    key = (str(file), digest(data), name, parameter, position, repr(default))
    if key not in _PASSES:
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            _PASSES[key] = True
            return True
        family = {name}
        for node in ast.walk(tree):  # subclasses defined there inherit the parameter
            if isinstance(node, ast.ClassDef) and any((_dotted(b) or "").rpartition(".")[2] in family for b in node.bases):
                family.add(node.name)
                for statement in node.body:
                    targets = statement.targets if isinstance(statement, ast.Assign) else \
                        [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value is not None else []
                    if any(isinstance(t, ast.Name) and t.id == parameter for t in targets):
                        _PASSES[key] = True
                        return True
        _PASSES[key] = any(
            (_dotted(node.func) or "").rpartition(".")[2] in family
            and (_unpacks_unknown(node, enclosing)
                 or any(k.arg == parameter and not _hands_on_default(k.value, enclosing, default) for k in node.keywords)
                 or position is not None and len(node.args) > position)
            for node, enclosing in _calls_with_their_function(tree)
        )
        if len(_PASSES) > 4096:
            _PASSES.clear()
    return _PASSES[key]


def _file_digest(file: Path) -> str:
    try:
        return digest(file.read_bytes())
    except OSError:
        return ""


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def package_of(path: Path) -> Tuple[str, Optional[Path]]:
    """``a.b`` for ``root/a/b/c.py`` (folders with ``__init__.py``), and ``root``."""
    parts: List[str] = []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)), folder


class Program:
    """What one file's analysis may ask about the program around it."""

    def __init__(self, tree: Optional[ast.Module], display: str, path: Optional[Path] = None) -> None:
        self.display = display
        self.path = Path(os.path.abspath(path)) if path is not None else None
        package, root = package_of(self.path) if self.path is not None else ("", None)
        self.package = package
        self.root = root
        self._tree = tree
        self._own: Optional[ModuleFacts] = None
        self._called: Optional[frozenset] = None
        self._modules: Dict[str, Optional[ModuleFacts]] = {}
        #: other files read: absolute path → content digest (the result depends on them)
        self.dependencies: Dict[str, str] = {}
        #: (function, parameter, index) → each caller's (value, line), for :meth:`arguments_for`
        self._arguments: Dict[Tuple[str, str, Optional[int], Optional[str]], Optional[List[Tuple[Any, int]]]] = {}
        self._call_index: Optional[Dict[str, List[Tuple[ast.Call, Optional[str], Optional[ast.AST]]]]] = None
        self._passing: set = set()  # (function, parameter) being followed through callers: a cycle guard
        self._held: Optional[frozenset] = None

    # -- facts of modules

    def called_names(self) -> frozenset:
        """Names the whole module calls (``f(…)``, ``self.f(…)``), from its ``ast``."""
        if self._called is None:
            names = set()
            if self._tree is not None:
                for node in ast.walk(self._tree):
                    if isinstance(node, ast.Call):
                        name = _called_name(node.func)
                        if name:
                            names.add(name)
            self._called = frozenset(names)
        return self._called

    def own(self) -> ModuleFacts:
        if self._own is None:
            self._own = module_facts(self._tree, self.display, self.package) if self._tree is not None \
                else ModuleFacts(self.display)
        return self._own

    def module(self, name: str) -> Optional[ModuleFacts]:
        """Another module of the checked tree, by absolute name; None when not found here."""
        if name in self._modules:
            return self._modules[name]
        facts = None
        file = self._find(name)
        if file is not None:
            facts = _read_facts(file, self._display_of(file))
            if facts is not None:
                self.dependencies[str(file)] = facts[0]
                facts = facts[1]
        self._modules[name] = facts
        return facts

    def _find(self, name: str) -> Optional[Path]:
        if self.root is None or self.path is None:
            return None
        relative = Path(*name.split("."))
        for base in (self.root, self.path.parent):
            for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
                if candidate.is_file() and candidate != self.path:
                    return candidate
        return None

    def _display_of(self, file: Path) -> str:
        try:
            return os.path.relpath(file)
        except ValueError:
            return str(file)

    def mentioned_elsewhere(self, name: str) -> bool:
        """Does another module of the package mention ``name`` (a caller we do not read from
        here, which may pass other values)? Standard input sees no other module. Files that
        mention it become dependencies; a file that starts mentioning it later is not noticed
        by a cached result (a known limit of this one question)."""
        if self.path is None:
            return False
        top = self.root / self.package.split(".")[0] if self.package and self.root is not None else self.path.parent
        key = (str(top), name)
        if key not in _MENTIONS:
            _MENTIONS[key] = _files_mentioning(top, name, recursive=bool(self.package))
        found = _MENTIONS[key]
        if found is None:
            return True  # too many files to read: assume a caller elsewhere
        others = [f for f in found if f != str(self.path)]
        for other in others:
            self.dependencies.setdefault(other, _file_digest(Path(other)))
        return bool(others)

    def decorates_elsewhere(self, factory: str) -> bool:
        """Is this module's retry-decorator factory applied (``@factory(...)``) in another module
        of the package? Those uses are judged there, each with its values
        (:mod:`~retrylint.extract.libraries.imported_factories`)."""
        if factory not in self.own().factories or not self.mentioned_elsewhere(factory):
            return False
        top = self.root / self.package.split(".")[0] if self.package and self.root is not None else self.path.parent  # type: ignore[union-attr]
        applied = re.compile(rb"@\s*(?:\w+\.)*" + re.escape(factory.encode()) + rb"\s*\(")
        for other in _MENTIONS.get((str(top), factory)) or ():
            if other == str(self.path):
                continue
            try:
                if applied.search(Path(other).read_bytes()):
                    return True
            except OSError:
                continue
        return False

    # -- questions the extractors ask

    def name_value(self, name: str) -> Optional[Value]:
        """A module-level name of the checked module: its own constant or an imported one."""
        return self._name_in(self.own(), name, _HOPS)

    def _name_in(self, facts: ModuleFacts, name: str, hops: int) -> Optional[Value]:
        if name in facts.constants:
            value, line = facts.constants[name]
            return Value(value, name, facts.path, line)
        imported = facts.imports.get(name)
        if imported is None or hops <= 0:
            return None
        module, attribute = imported
        if attribute is None:
            return None
        other = self.module(module)
        if other is not None:
            found = self._name_in(other, attribute, hops - 1)
            if found is not None:
                return Value(found.value, f"{module}.{attribute}", found.path, found.line)
        return None

    def expression(self, name: str) -> Optional[Tuple[str, ModuleFacts, int]]:
        """The dict or call an imported name is bound to in another module of the checked tree
        (``from .config import RETRY_KWARGS``): its text, that module's facts, its line."""
        imported = self.own().imports.get(name)
        if imported is None or imported[1] is None:
            return None
        other = self.module(imported[0])
        if other is None or imported[1] not in other.expressions:
            return None
        text, line = other.expressions[imported[1]]
        return text, other, line

    def helper(self, name: str, receiver: Optional[str], owner: Optional[str]) -> Optional[Tuple[Helper, ModuleFacts]]:
        """The delay helper a call calls: ``helper(…)``, ``self.helper(…)``, or one imported
        from another module of the checked tree (``from .backoff import next_delay``)."""
        return self._function_fact("helpers", name, receiver, owner)

    def quiet(self, name: str, receiver: Optional[str], owner: Optional[str]) -> Optional[Tuple[int, ModuleFacts]]:
        """A bookkeeping function a call calls (:func:`_note_quiet`), found as :meth:`helper`
        finds a delay helper: it cannot wait."""
        return self._function_fact("quiet", name, receiver, owner)

    def converts(self, name: str, receiver: Optional[str], owner: Optional[str]) -> Optional[Tuple[Tuple[str, ...], ModuleFacts, int]]:
        """The exception classes a called function lets out, when it turns every failure into
        errors of its own (:func:`_converted_errors`), the module that says so, and its line."""
        found = self._function_fact("converts", name, receiver, owner)
        if found is None:
            return None
        (escapes, line), facts = found
        return escapes, facts, line

    def exception_bases(self, name: str, facts: Optional[ModuleFacts] = None, hops: int = 4) -> Optional[Tuple[str, ...]]:
        """The last names of an exception class and its bases up to a builtin one, following
        classes of the checked tree (``RuntimeErrorWithCode`` → ``RuntimeError``); None when a
        base is not readable (a library's class, several bases)."""
        facts = facts or self.own()
        last = name.rsplit(".", 1)[-1]
        if last in BUILTIN_EXCEPTIONS:
            return (last,)
        found = self._class_of(facts, name)
        if found is None or hops <= 0:
            return None
        where, cls = found
        if len(cls.bases) != 1:
            return None
        above = self.exception_bases(cls.bases[0], where, hops - 1)
        return (last, *above) if above is not None else None

    def classifier(self, name: str, receiver: Optional[str],
                   owner: Optional[str]) -> Optional[Tuple[Classifier, ModuleFacts]]:
        """The status predicate a call calls (``self._should_retry(response)``), found as
        :meth:`helper` finds a delay helper."""
        return self._function_fact("classifiers", name, receiver, owner)

    def policy_factory(self, name: str, receiver: Optional[str]) -> Optional[Tuple[PolicyFactory, ModuleFacts]]:
        """The retry-decorator factory of *another* module a call names (``retry_pattern`` from
        ``from .utils import retry_pattern``, ``utils.retry_pattern``); one of this module is
        judged at its uses by the module's own extractor."""
        found = self._function_fact("factories", name, receiver, None)
        if found is None or found[1] is self.own():
            return None
        return found

    def status_raiser(self, name: str, receiver: Optional[str], owner: Optional[str]) -> Optional[Tuple[str, Value]]:
        """What a called function raises for a failed HTTP status (``"http"``: the HTTP library's
        error, from ``raise_for_status()``; ``"own"``: its own error, 4xx included) and where it is
        (for ``explain``), found as :meth:`helper` finds a delay helper, base classes and imports
        included; None if it does not raise for a status."""
        found = self._function_fact("status_raisers", name, receiver, owner)
        if found is None:
            return None
        (kind, line), facts = found
        shown = f"`{name}` calls raise_for_status()" if kind == "http" else f"`{name}` raises its own error for 4xx"
        return kind, Value("", name, facts.path, line, shown=shown)

    def _function_fact(self, table: str, name: str, receiver: Optional[str], owner: Optional[str]):
        own = self.own()
        if receiver is None:
            if name in getattr(own, table):
                return getattr(own, table)[name], own
            imported = own.imports.get(name)
            if imported is not None and imported[1] is not None:
                other = self.module(imported[0])
                if other is not None and imported[1] in getattr(other, table):
                    return getattr(other, table)[imported[1]], other
            return None
        if receiver in ("self", "cls") and owner is not None:
            if self._overridden_below(own, owner, name):
                return None
            if table == "helpers":
                found = own.helpers.get(f"{owner}.{name}")
                return (found, own) if found is not None else None
            return self._method_fact(table, own, owner, name, _HOPS)
        imported = own.imports.get(receiver)
        if imported is not None:
            module = f"{imported[0]}.{imported[1]}" if imported[1] else imported[0]
            other = self.module(module)
            if other is not None and name in getattr(other, table):
                return getattr(other, table)[name], other
        return None

    def _method_fact(self, table: str, facts: ModuleFacts, owner: str, name: str, hops: int):
        """``self.name`` in class ``owner``: its own method, or one inherited from a base class
        of this module or one it imports (``SyncAPIClient(BaseClient)``)."""
        found = getattr(facts, table).get(f"{owner}.{name}")
        if found is not None:
            return found, facts
        cls = facts.classes.get(owner)
        if cls is None or hops <= 0 or name in cls.methods:
            return None  # defined here, and not one we read
        for base in cls.bases:
            head, _, last = base.rpartition(".")
            if not head and last in facts.class_nodes:
                other: Optional[ModuleFacts] = facts
            else:
                imported = facts.imports.get(head or last)
                if imported is None:
                    continue
                if head:
                    other = self.module(f"{imported[0]}.{imported[1]}" if imported[1] else imported[0])
                elif imported[1] is not None:
                    other, last = self.module(imported[0]), imported[1]
                else:
                    continue
            if other is not None:
                result = self._method_fact(table, other, last, name, hops - 1)
                if result is not None:
                    return result
        return None

    def arguments_for(self, function: str, parameter: str, index: Optional[int],
                      method: bool = False, owner: Optional[str] = None) -> Optional[List[Any]]:
        """What the calls of ``function`` in this module pass for ``parameter`` (``index``: its
        position among the arguments a caller writes; None when it is keyword-only), one entry
        per call: the folded literal, :data:`DEFAULT` when the call leaves it out, or
        :data:`UNREAD` when the call passes something else or ``*args``/``**kwargs``. A call
        inside ``function`` itself (a recursion handing the parameter on) is not a caller.
        None when nothing here calls it: the value is then the callers' elsewhere, unknown."""
        found = self._callers(function, parameter, index, method, owner)
        return [value for value, _ in found] if found is not None else None

    def default_callers(self, function: str, parameter: str, index: Optional[int], method: bool = False,
                        owner: Optional[str] = None) -> List[int]:
        """Lines of the calls :meth:`arguments_for` found leaving ``parameter`` out."""
        return [line for value, line in self._callers(function, parameter, index, method, owner) or () if value is DEFAULT]

    def _callers(self, function: str, parameter: str, index: Optional[int],
                 method: bool, owner: Optional[str] = None) -> Optional[List[Tuple[Any, int]]]:
        key = (function, parameter, index, owner)
        if key in self._arguments:
            return self._arguments[key]
        found: Optional[List[Tuple[Any, int]]] = None
        if self._tree is not None:
            values: List[Tuple[Any, int]] = []
            for call, call_class, enclosing in self._calls_of(function):
                if self._calls_it(call, method) and not self._calls_another_classes_own(call, call_class, owner, function):
                    values.append((self._argument(call, parameter, index, enclosing, call_class), call.lineno))
            found = values or None
        self._arguments[key] = found
        return found

    def _argument(self, call: ast.Call, parameter: str, index: Optional[int],
                  enclosing: Optional[ast.AST] = None, call_class: Optional[str] = None) -> Any:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return UNREAD
        given = next((k.value for k in call.keywords if k.arg == parameter), None)
        if given is None and index is not None and index < len(call.args):
            given = call.args[index]
        if given is None:
            return DEFAULT
        value = fold(given, self.own().constants)
        if value is _MISSING and isinstance(given, ast.Name) and enclosing is not None:
            return self._passed_through(given.id, enclosing, call_class)
        return UNREAD if value is _MISSING else value

    def _passed_through(self, name: str, enclosing: ast.AST, call_class: Optional[str]) -> Any:
        """``download(..., num_max_attempts=num_max_attempts)`` inside ``download_as_byte_array(...,
        num_max_attempts=1)``: the caller hands on its own parameter, whose literal default holds
        where nobody passes it (no call here, none in another module of the package)."""
        args = enclosing.args  # type: ignore[attr-defined]
        positional = list(args.posonlyargs) + list(args.args)
        defaults = _parameter_defaults(enclosing, self.own().constants)
        default = defaults.get(name, _MISSING)
        if default is _MISSING or not _is_literal(default) or isinstance(default, tuple):
            return UNREAD
        key = (enclosing.name, name)  # type: ignore[attr-defined]
        if key in self._passing:
            return UNREAD
        method = bool(positional) and positional[0].arg in ("self", "cls")
        index: Optional[int] = next((i for i, p in enumerate(positional) if p.arg == name), None)
        if index is not None and method:
            index -= 1
        self._passing.add(key)
        try:
            callers = self._callers(enclosing.name, name, index, method, call_class if method else None)  # type: ignore[attr-defined]
            passed = self.passed_elsewhere(enclosing.name, name, index, default)  # type: ignore[attr-defined]
        finally:
            self._passing.discard(key)
        if passed or callers is not None and any(v is not DEFAULT and v != default for v, _ in callers):
            return UNREAD
        return default

    def _calls_it(self, call: ast.Call, method: bool) -> bool:
        """A call that surely calls the function asked about: ``f(...)`` for a module function;
        for a method ``self.f(...)``/``cls.f(...)``, or ``obj.f(...)`` on a plain name that is
        no imported module, for a name no builtin type has (``d.get(key)`` is a dict's)."""
        func = call.func
        if not method:
            return isinstance(func, ast.Name)
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return False
        receiver = func.value.id
        if receiver in ("self", "cls"):
            return True
        return receiver not in self.own().imports and func.attr not in _BUILTIN_METHODS

    def _calls_another_classes_own(self, call: ast.Call, call_class: Optional[str], owner: Optional[str],
                                   function: str) -> bool:
        """``self.ensure()`` in class ``D`` that defines its own ``ensure``: not a call of
        ``owner.ensure`` (two classes of a module with a method of the same name)."""
        func = call.func
        if owner is None or call_class is None or call_class == owner:
            return False
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")):
            return False
        facts = self.own().classes.get(call_class)
        return facts is not None and function in facts.methods

    def _calls_of(self, function: str) -> List[Tuple[ast.Call, Optional[str], Optional[ast.AST]]]:
        """``function(...)`` and ``anything.function(...)`` outside ``function``'s own body, each
        with the class the call is written in and the function it is written in."""
        if self._call_index is None:
            index: Dict[str, List[Tuple[ast.Call, Optional[str], Optional[ast.AST]]]] = {}
            stack: List[Tuple[ast.AST, Optional[ast.AST], Optional[str]]] = [(self._tree, None, None)]  # type: ignore[list-item]
            while stack:
                node, inside, in_class = stack.pop()
                if isinstance(node, _FUNCTIONS):
                    inside = node
                elif isinstance(node, ast.ClassDef):
                    in_class = node.name
                elif isinstance(node, ast.Call):
                    name = _called_name(node.func)
                    if name and (inside is None or name != inside.name):  # type: ignore[attr-defined]
                        index.setdefault(name, []).append((node, in_class, inside))
                stack.extend((child, inside, in_class) for child in ast.iter_child_nodes(node))
            self._call_index = index
        return self._call_index.get(function, [])

    def method_held(self, owner: str, attribute: str) -> Optional[str]:
        """The method an attribute of ``owner`` holds (:attr:`ClassFacts.held`), read from the
        whole file: narrowing may blank ``__init__``."""
        cls = self.own().classes.get(owner)
        return cls.held.get(attribute) if cls is not None else None

    def held_methods(self) -> frozenset:
        """Methods called through an attribute that holds them (:meth:`method_held`):
        ``self._backoff_fn(n)`` uses ``backoff``."""
        if self._held is None:
            held = set()
            own = self.own()
            for owner, cls in own.classes.items():
                if not cls.held:
                    continue  # most classes hold no method: their bodies are not walked
                for call in ast.walk(own.class_nodes[owner][0]):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                            and isinstance(call.func.value, ast.Name) and call.func.value.id == "self" \
                            and call.func.attr in cls.held:
                        held.add(cls.held[call.func.attr])
            self._held = frozenset(held)
        return self._held

    def retry_policy_of(self, qualified: str) -> Optional["RetryPolicy"]:
        """The retry policy of a function defined in another module of the checked tree, by
        its qualified name (``pkg.client.fetch``, ``.client.fetch``), when a retry decorator
        there gives it one: what retrying around a call of it multiplies (RTY501)."""
        dots = len(qualified) - len(qualified.lstrip("."))
        module, _, function = qualified[dots:].rpartition(".")
        if dots:
            module = _absolute(module or None, dots, self.package) or ""
        if not module or not function:
            return None
        facts = self.module(module)
        if facts is None or function not in facts.retried:
            return None
        file = self._find(module)
        if file is None:
            return None
        policy, dependencies = _decorated_policy(file, self._display_of(file), facts.retried[function])
        self.dependencies.update(dependencies)  # what that file's own policy read elsewhere
        return policy

    def inherited_clears(self, owner: str, method: str) -> frozenset:
        """The ``self`` attributes a method of ``owner``'s base class resets to ``None``/``False``
        (``_invalidate`` of a base class in another module of the tree); one level of bases."""
        own = self.own()
        found = own.class_nodes.get(owner)
        if found is None:
            return frozenset()
        for base in found[0].bases:
            node = self._class_node(own, base)
            if node is None:
                continue
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name == method:
                    return frozenset(self_attributes_cleared(member))
        return frozenset()

    def _class_node(self, own: ModuleFacts, base: ast.expr) -> Optional[ast.ClassDef]:
        """A base class as written (``Base``, ``module.Base``), in this module or one it imports."""
        if isinstance(base, ast.Name):
            if base.id in own.class_nodes:
                return own.class_nodes[base.id][0]
            imported = own.imports.get(base.id)
            if imported is None or imported[1] is None:
                return None
            module, name = imported
        elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id in own.imports:
            imported = own.imports[base.value.id]
            module = f"{imported[0]}.{imported[1]}" if imported[1] else imported[0]
            name = base.attr
        else:
            return None
        other = self.module(module)
        found = other.class_nodes.get(name) if other is not None else None
        return found[0] if found is not None else None

    def attribute_value(self, receiver: str, attribute: str, owner: Optional[str]) -> Optional[Value]:
        """``self.x``/``cls.x`` in class ``owner``; ``Class.x``; ``module.X``; ``settings.X``."""
        own = self.own()
        if receiver in ("self", "cls"):
            if owner is None or owner not in own.classes or self._overridden_below(own, owner, attribute):
                return None
            return self._class_attribute(own, owner, attribute, _HOPS)
        if receiver.startswith("self.") and receiver.count(".") == 1:
            if owner is None or owner not in own.classes:
                return None
            return self._settings_field(own, owner, receiver[5:], attribute)
        head, _, rest = receiver.partition(".")
        return self._dotted_attribute(own, head, rest, attribute, _HOPS)

    def attribute_default(self, receiver: str, attribute: str, owner: Optional[str]) -> Optional[Value]:
        """``self.retries`` in ``owner`` holding an ``__init__`` parameter's (or field's) default
        that switches the retry off (0 or 1), as the package ships it: no call here or in another
        module of the package passes the parameter to the class or to a subclass of it (which
        inherits the parameter: ``InstanceMetadataFetcher(num_attempts=…)``), and no subclass
        sets another value. Users may switch it on; the package's defaults decide (the labeling
        convention: a retry that cannot happen with the package's defaults fires nothing)."""
        own = self.own()
        if receiver.startswith("self.") and receiver.count(".") == 1 and owner is not None and owner in own.classes:
            return self._settings_off_default(own, owner, receiver[5:], attribute)
        if receiver not in ("self", "cls") or owner is None or owner not in own.classes:
            return None
        if self._overridden_below(own, owner, attribute):
            return None
        cls = own.settled().classes.get(owner)
        if cls is None or attribute not in cls.off_defaults or attribute in cls.values:
            return None
        value, line, how = cls.off_defaults[attribute]
        parameter = cls.from_parameters.get(attribute, attribute)
        family = [owner] + self._subclasses(own, owner)
        position = cls.positions.get(parameter)
        if self._passed_here(family[1:], parameter) or any(self.passed_elsewhere(name, parameter, position) for name in family):
            return None
        return Value(value, f"{owner}.{attribute} ({how}, which no caller changes)", own.path, line)

    def _settings_off_default(self, own: ModuleFacts, owner: str, holder: str, attribute: str) -> Optional[Value]:
        """``self.config.max_retries`` where ``self.config`` is a ``Config()`` built in ``__init__``
        (``config or Config()``) or an ``__init__`` parameter annotated ``Config``, and
        ``Config.max_retries`` holds a default that switches the retry off which no call in the
        package passes another value for: the retry does not happen as the package ships."""
        if self._overridden_below(own, owner, holder):
            return None
        cls = own.settled().classes.get(owner)
        if cls is None:
            return None
        built = cls.built.get(holder)
        called = built[0] if built is not None else cls.typed.get(holder)
        if called is None:
            return None
        found = self._class_of(own, called)
        if found is None:
            return None
        facts, target = found
        if attribute not in target.off_defaults or attribute in target.values:
            return None
        value, line, how = target.off_defaults[attribute]
        parameter = target.from_parameters.get(attribute, attribute)
        position = target.positions.get(parameter)
        if built is not None:
            _, positional, keywords, _ = built
            if parameter in keywords or (position is not None and position < len(positional)):
                return None
        if self._passed_here([target.name], parameter) or self.passed_elsewhere(target.name, parameter, position):
            return None
        return Value(value, f"{owner}.{holder}.{attribute} ({target.name}: {how}, which no caller changes)",
                     facts.path, line)

    @staticmethod
    def _subclasses(facts: ModuleFacts, owner: str) -> List[str]:
        found: List[str] = []
        frontier = [owner]
        while frontier:
            base = frontier.pop()
            for cls in facts.classes.values():
                if base in cls.bases and cls.name not in found and cls.name != owner:
                    found.append(cls.name)
                    frontier.append(cls.name)
        return found

    def _passed_here(self, classes: List[str], parameter: str) -> bool:
        """A call of one of ``classes`` in this module that passes ``parameter`` (or may: ``*args``,
        ``**kwargs``, positional arguments)."""
        if not classes or self._tree is None:
            return False
        for node in ast.walk(self._tree):
            if isinstance(node, ast.Call) and _called_name(node.func) in classes:
                if node.args or any(k.arg in (None, parameter) for k in node.keywords):
                    return True
        return False

    def passed_elsewhere(self, name: str, parameter: str, position: Optional[int], default: Any = _MISSING) -> bool:
        """Another module of the package that names ``name`` and passes ``parameter`` to it or to
        a subclass it defines (by keyword, by ``position``, or through ``**kwargs``), or defines
        a subclass that gives the field its own value. A module that names the class without
        that uses the default."""
        if self.path is None or not self.mentioned_elsewhere(name):
            return False
        top = self.root / self.package.split(".")[0] if self.package and self.root is not None else self.path.parent
        found = _MENTIONS.get((str(top), name))
        if found is None:
            return True  # too many files to read: assume a caller elsewhere sets it
        return any(_passes(Path(other), name, parameter, position, default) for other in found if other != str(self.path))

    def _dotted_attribute(self, facts: ModuleFacts, head: str, rest: str, attribute: str, hops: int) -> Optional[Value]:
        if hops <= 0:
            return None
        if not rest and head in facts.classes:
            return self._class_attribute(facts, head, attribute, hops)
        if not rest and head in facts.instances:
            return self._instance_attribute(facts, facts.instances[head], attribute, hops)
        imported = facts.imports.get(head)
        if imported is None:
            return None
        module, name = imported
        dotted = f"{module}.{name}" if name else module
        if rest:
            dotted = f"{dotted}.{rest}"
        # ``config.X``: the module ``config``; ``Settings.X`` / ``settings.X`` imported from one.
        other = self.module(dotted)
        if other is not None:
            found = self._name_in(other, attribute, hops - 1)
            if found is not None:
                return Value(found.value, f"{dotted}.{attribute}", found.path, found.line)
            return None
        if name is not None and not rest:
            other = self.module(module)
            if other is not None:
                return self._dotted_attribute(other, name, "", attribute, hops - 1)
        return None

    def _instance_attribute(self, facts: ModuleFacts, class_name: str, attribute: str, hops: int) -> Optional[Value]:
        head, _, rest = class_name.partition(".")
        if not rest and head in facts.classes:
            return self._class_attribute(facts, head, attribute, hops)
        imported = facts.imports.get(head)
        if imported is None or rest:
            return None
        module, name = imported
        other = self.module(module) if name else None
        if other is not None and name in other.classes:
            return self._class_attribute(other, name, attribute, hops - 1)
        return None

    def _class_attribute(self, facts: ModuleFacts, class_name: str, attribute: str, hops: int) -> Optional[Value]:
        cls = facts.settled().classes.get(class_name)
        if cls is None or hops <= 0:
            return None
        if attribute in cls.unknown:
            return None
        if attribute in cls.values:
            value, line, how = cls.values[attribute]
            return Value(value, f"{class_name}.{attribute} ({how})", facts.path, line)
        for base in cls.bases:
            head, _, rest = base.partition(".")
            if not rest and head in facts.classes:
                found = self._class_attribute(facts, head, attribute, hops - 1)
            else:
                found = self._instance_attribute(facts, base, attribute, hops - 1)
            if found is not None:
                return found
        return None

    def _settings_field(self, own: ModuleFacts, owner: str, holder: str, attribute: str) -> Optional[Value]:
        """``self.wait_config.backoff`` where ``__init__`` did ``self.wait_config =
        WaitConfig(sleep, backoff, retries)``: the argument given for the field ``backoff``
        (a literal or the default of the ``__init__`` parameter passed), else the class's own
        default for it."""
        if self._overridden_below(own, owner, holder):
            return None
        cls = own.settled().classes.get(owner)
        if cls is not None and holder not in cls.built and holder in cls.typed:
            typed = self._class_of(own, cls.typed[holder])
            if typed is None:
                return None
            facts, target = typed
            found = self._class_attribute(facts, target.name, attribute, _HOPS)
            if found is None:
                return None
            # ``config: Configuration``: whatever object the caller passes, as the class ships it
            return Value(found.value, f"{owner}.{holder}.{attribute} (as shipped: {found.origin})", found.path, found.line)
        if cls is None or holder not in cls.built:
            return None
        called, positional, keywords, line = cls.built[holder]
        found = self._class_of(own, called)
        if found is None:
            return None
        facts, target = found
        # The fields in the order a caller passes them: a dataclass's/NamedTuple's annotated
        # names, or the parameters of the class's own ``__init__``.
        if "__init__" in target.methods:
            parameter = target.from_parameters.get(attribute)
            index = target.positions.get(parameter) if parameter is not None else None
        else:
            parameter = attribute if attribute in target.fields else None
            index = target.fields.index(attribute) if parameter is not None else None
        if parameter is not None and parameter in keywords:
            given = keywords[parameter]
        elif index is not None and index < len(positional):
            given = positional[index]
        else:
            return self._class_attribute(facts, target.name, attribute, _HOPS)
        if given is _MISSING or not _is_literal(given):
            return None
        return Value(given, f"{owner}.{holder}.{attribute} (passed to {called} in __init__)", own.path, line)

    def _class_of(self, facts: ModuleFacts, called: str) -> Optional[Tuple[ModuleFacts, ClassFacts]]:
        """The class ``WaitConfig`` / ``_connector.WaitConfig`` names, here or in a module it imports."""
        head, _, last = called.rpartition(".")
        if not head:
            if last in facts.classes:
                return facts, facts.settled().classes[last]
            imported = facts.imports.get(last)
            if imported is None or imported[1] is None:
                return None
            other, last = self.module(imported[0]), imported[1]
        else:
            imported = facts.imports.get(head)
            if imported is None or "." in head:
                return None
            other = self.module(f"{imported[0]}.{imported[1]}" if imported[1] else imported[0])
        if other is None or last not in other.classes:
            return None
        return other, other.settled().classes[last]

    def _overridden_below(self, facts: ModuleFacts, owner: str, attribute: str) -> bool:
        """A subclass here that sets the attribute: ``self.x`` may be either value."""
        for cls in facts.classes.values():
            if owner in cls.bases and (attribute in cls.values or attribute in cls.unknown or attribute in cls.methods):
                return True
        return False


#: Retry policies of other files' decorated functions, per process, by content digest and
#: decorator lines; and the files being read for one (an import cycle must not recurse).
_DECORATED: Dict[Tuple[str, str, Tuple[int, ...]], Tuple[Optional["RetryPolicy"], Tuple[Tuple[str, str], ...]]] = {}
_READING: set = set()


def _decorated_policy(file: Path, display: str,
                      lines: Tuple[int, ...]) -> Tuple[Optional["RetryPolicy"], Tuple[Tuple[str, str], ...]]:
    """The policy the extractors find at one of the decorator ``lines`` of ``file``: the
    file is analysed as ``retrylint check`` would (its own program view included)."""
    try:
        data = file.read_bytes()
    except OSError:
        return None, ()
    key = (str(file), digest(data), lines)
    if key in _DECORATED:
        return _DECORATED[key]
    if str(file) in _READING:
        return None, ()
    from .engine import check_path, settings_with  # the engine asks this module: imported late
    from .rules import RULES

    _READING.add(str(file))
    try:
        report = check_path(file, display, settings_with(tuple(rule.code for rule in RULES)), want_policies=True)
    except Exception:  # noqa: BLE001 - a file we cannot analyse gives no policy, never a crash
        report = None
    finally:
        _READING.discard(str(file))
    found = None
    for policy in (report.policies if report is not None and report.policies else ()):
        if policy.location.line in lines and policy.source not in TASK_QUEUE_SOURCES:
            # its syntax tree stays behind: only the model travels
            found = policy.with_(anchor=None, inner=(), origins=(f"{display}:{policy.location.line}",))
            break
    dependencies = tuple(report.dependencies) if report is not None else ()
    if len(_DECORATED) > 1024:
        _DECORATED.clear()
    _DECORATED[key] = (found, dependencies)
    return found, dependencies


#: Facts of other files, per process, by content digest (a file rewritten within the
#: file system's timestamp granularity must not keep its old facts).
_FACTS: Dict[Tuple[str, str], Optional[ModuleFacts]] = {}


def _read_facts(file: Path, display: str) -> Optional[Tuple[str, Optional[ModuleFacts]]]:
    try:
        data = file.read_bytes()
    except OSError:
        return None
    content = digest(data)
    key = (str(file), content)
    if key in _FACTS:
        return content, _FACTS[key]
    facts: Optional[ModuleFacts]
    try:
        tree = ast.parse(data)
        facts = module_facts(tree, display, package_of(file)[0])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        facts = None
    if len(_FACTS) > 4096:
        _FACTS.clear()
    _FACTS[key] = facts
    return content, facts

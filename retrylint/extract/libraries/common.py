"""Shared pieces of the retry-library extractors: reading arguments, building policies.

Each library module knows one library's names and defaults; this module knows how
to read a call's arguments statically (numbers, durations, names bound once,
module constants) and how to turn what a library says into the model.  A value
that cannot be read is UNKNOWN and no rule judges it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from ...model import UNKNOWN, Bound, CatchKind, Delay, GiveUp, Location, Num, RetriedError, RetryPolicy, known
from ...narrowing import Words
from ...syntax import call_args, dotted_name, number, unwrap_await, walk
from ..context import ModuleContext
from ..delays import DelayEnv, shape_of
from ..errors import CATCH_ALL, LEAVES, catcher_of, exception_names
from ..status import HTTP_STATUS_EXCEPTIONS

_SECONDS = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0, "milliseconds": 0.001,
            "microseconds": 0.000001, "weeks": 604800.0}


@dataclass
class Args:
    """The arguments of one call, by position and keyword."""

    call: cst.Call
    positional: List[cst.BaseExpression]
    keywords: Dict[str, cst.BaseExpression]
    #: ``**kwargs`` or ``*args`` present: an argument not seen may still be given.
    opaque: bool

    @classmethod
    def of(cls, call: cst.Call) -> "Args":
        positional, keywords = call_args(call)
        return cls(call, positional, keywords, any(a.star for a in call.args))

    def get(self, name: str, index: Optional[int] = None) -> Optional[cst.BaseExpression]:
        if name in self.keywords:
            return self.keywords[name]
        if index is not None and index < len(self.positional):
            return self.positional[index]
        return None

    def given(self, name: str, index: Optional[int] = None) -> bool:
        return self.get(name, index) is not None


def resolve(expr: Optional[cst.BaseExpression], ctx: ModuleContext, depth: int = 0) -> Optional[cst.BaseExpression]:
    """Follow a name bound exactly once (locally or at module level) to its value."""
    expr = unwrap_await(expr) if expr is not None else None
    argument = ctx.substitution(expr) if expr is not None else None
    if argument is not None:
        expr = unwrap_await(argument)  # a factory's parameter: what its use passed
    while isinstance(expr, cst.Name) and depth < 4 and expr.value not in ("None", "True", "False"):
        bindings = [b for b in ctx.bindings(expr) if b.kind != "import"]
        values = [b.value for b in bindings if b.kind in ("assign", "annassign") and b.value is not None]
        if len(bindings) == 1 and len(values) == 1:
            expr = unwrap_await(values[0])
        elif not bindings:
            constant = ctx.module_constant(expr.value, expr)
            if constant is None:
                break  # an imported name: maybe a strategy another module builds (below)
            expr = unwrap_await(constant)
        else:
            return expr
        depth += 1
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        # ``Retry(total=self.max_retries)`` with the attribute set once from a literal default;
        # ``self._client_args["max_retries"]`` from a dict built in ``__init__``.
        outside_value = ctx.outside_value(expr)
        if outside_value is not None:
            return outside_value
    if isinstance(expr, (cst.Call, cst.Attribute, cst.Name)):
        # ``wait=_wait()`` returning ``wait_exponential(...)``, ``self.wait`` set once in ``__init__``.
        from .built import strategy_of

        built = strategy_of(expr, ctx)
        if built is not None:
            return built
    return expr


def is_none(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def is_false(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False" or number(expr) == 0


def shipped_default(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """``HTTPAdapter(max_retries=max_retries)`` inside ``def __init__(self, max_retries=2)``: the
    parameter's default when no caller in the package passes another value (geopy's
    ``RequestsAdapter``), else None: a value a user may pass stays unknown."""
    if not isinstance(expr, cst.Name):
        return None
    bindings = ctx.bindings(expr)
    if len(bindings) != 1 or bindings[0].kind != "param" or bindings[0].value is None:
        return None
    param = bindings[0].node
    if not isinstance(param, cst.Param) or not ctx.parameter_as_shipped(param):
        return None
    ctx.note_default_used(param, expr, ctx.literal(param.default))
    return bindings[0].value


def value(expr: Optional[cst.BaseExpression], ctx: ModuleContext, default: Num = None) -> Num:
    """A number, or None for an absent argument / a literal ``None``, else UNKNOWN."""
    if expr is None:
        return default
    resolved = resolve(expr, ctx)
    if resolved is None or is_none(resolved):
        return None
    duration = seconds(resolved, ctx)
    if duration is not UNKNOWN:
        return duration
    return UNKNOWN


def seconds(expr: cst.BaseExpression, ctx: ModuleContext) -> Num:
    """``5``, ``0.5``, ``CONSTANT``, ``2 * 60``, ``timedelta(minutes=2)`` → seconds; else UNKNOWN."""
    if isinstance(expr, cst.Call) and ctx.call_name(expr) & {"datetime.timedelta"}:
        positional, keywords = call_args(expr)
        total = 0.0
        if positional:
            days = value(positional[0], ctx)
            if not known(days):
                return UNKNOWN
            total += float(days) * 86400  # type: ignore[arg-type]
        for key, amount in keywords.items():
            factor = _SECONDS.get(key)
            amount_value = value(amount, ctx)
            if factor is None or not known(amount_value):
                return UNKNOWN
            total += float(amount_value) * factor  # type: ignore[arg-type]
        return total
    shape = shape_of(expr, DelayEnv(ctx, callers=False))  # a policy's number: not from callers (DelayEnv.callers)
    if shape.kind == "const" and known(shape.value):
        return float(shape.value)  # type: ignore[arg-type]
    return UNKNOWN


def scaled(amount: Num, factor: float) -> Num:
    return float(amount) * factor if known(amount) else amount  # type: ignore[arg-type]


def names_of(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Optional[Tuple[str, ...]]:
    """Exception classes in ``X`` / ``(X, Y)`` / a name bound to a tuple; None when unreadable."""
    if expr is None:
        return None
    resolved = resolve(expr, ctx)
    if resolved is None:
        return None
    if isinstance(resolved, (cst.Tuple, cst.List)):
        out: List[str] = []
        for element in resolved.elements:
            inner = names_of(element.value, ctx)
            if inner is None:
                return None
            out.extend(inner)
        return tuple(out)
    if isinstance(resolved, (cst.Name, cst.Attribute)):
        return exception_names(resolved, ctx)
    return None


def clause(names: Sequence[str], location: Location, text: str, permanent_exit: bool = False) -> RetriedError:
    """The errors a library policy retries."""
    catch_all = any(n in CATCH_ALL for n in names)
    return RetriedError(
        kind=CatchKind.CATCH_ALL if catch_all else CatchKind.NAMED,
        names=tuple(names),
        permanent_exit_before=permanent_exit,
        checks_status=False,
        raises_http_status=bool(set(names) & HTTP_STATUS_EXCEPTIONS),
        location=location,
        text=text,
    )


def predicate(location: Location, text: str) -> RetriedError:
    """A retry condition we cannot read (a callable): never judged."""
    return RetriedError(kind=CatchKind.PREDICATE, location=location, text=text)


def decorated(call: cst.CSTNode, ctx: ModuleContext) -> Optional[cst.FunctionDef]:
    """The function a decorator expression decorates."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Decorator):
        owner = ctx.parent(parent)
        if isinstance(owner, cst.FunctionDef):
            return owner
    return None


def wraps_a_generator(node: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``@backoff.on_exception(...)`` on a function that yields: the decorator wraps only the
    call that creates the generator, which cannot fail; the work runs later, while the caller
    iterates, outside the retry (tap-facebook's ``get_ads``). No retry ever happens."""
    function = decorated(node, ctx)
    if function is None:
        return False
    return any(isinstance(n, cst.Yield) for n in walk(function.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)))


def retries_nothing_it_lets_out(policy: RetryPolicy, ctx: ModuleContext) -> bool:
    """dashscope's ``@retry(retry=retry_if_exception_type((ConnectionError, Timeout, …)))`` on
    ``_sync_upload_to_oss``, which turns every failure into ``RuntimeErrorWithCode`` (or lets its
    own ``OSSUploadError`` out): no error the function can raise is one the decorator retries,
    so it never retries (read from the program view's :func:`~retrylint.program._converted_errors`)."""
    function = decorated(policy.anchor, ctx) if policy.anchor is not None else None
    if function is None or not policy.errors or any(e.kind is not CatchKind.NAMED for e in policy.errors):
        return False
    owner = ctx.enclosing_class(function)
    found = ctx.program.converts(function.name.value, "self" if owner else None, owner)
    if found is None:
        return False
    escapes, facts, _ = found
    caught = [tuple(e.names) for e in policy.errors]
    return all(catcher_of(error, caught, ctx, facts) == LEAVES for error in escapes)


def build(
    source: str,
    node: cst.CSTNode,
    ctx: ModuleContext,
    bound: Bound,
    delay: Delay,
    errors: Iterable[RetriedError] = (),
    description: str = "",
    give_up: GiveUp = GiveUp.RAISE,
    statuses=None,
) -> RetryPolicy:
    """A policy reported on the configuring call (or bare decorator name)."""
    location = ctx.location(node)
    function = decorated(node, ctx)
    target = function.name.value if function is not None else ""
    if function is not None and _failures_answered(function, ctx):
        errors = [replace(c, permanent_exit_before=True) if c.kind is CatchKind.CATCH_ALL else c for c in errors]
    return RetryPolicy(
        source=source,
        bound=bound,
        delay=delay,
        location=location,
        errors=tuple(errors),
        statuses=statuses,
        give_up=GiveUp.NEVER if bound.unbounded else give_up,
        header_lines=tuple(location.lines),
        delay_location=location,
        extent=ctx.location(function) if function is not None else location,
        description=description,
        operation=target,
        is_async=bool(function is not None and function.asynchronous is not None),
        anchor=node,
    )


#: Calls that build a value and do no remote work: they are not the operation a retry repeats.
_PLAIN_CALLS = frozenset({"str", "int", "float", "bool", "dict", "list", "tuple", "set", "len", "isinstance",
                          "repr", "format", "Exception", "ValueError", "RuntimeError", "TypeError"})


def _failures_answered(function: cst.FunctionDef, ctx: ModuleContext) -> bool:
    """Every operation the decorated function calls is a helper of the module that answers a
    failure with a value (:meth:`Summaries.answers_failures`): the server's refusals come back as
    values, so the retry sees the failures that carry no answer (a lost connection), not a 4xx.
    Calls inside the function's own handlers (``raise Exception(str(e))``) are not operations."""
    operations = []
    stack: List[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ExceptHandler)):
            continue
        if isinstance(node, cst.Call):
            name = node.func.value if isinstance(node.func, cst.Name) else None
            if name not in _PLAIN_CALLS:
                operations.append(node)
                continue  # its arguments are values handed to the operation
        stack.extend(node.children)
    return bool(operations) and all(ctx.summaries.answers_failures(ctx.helper_key(call)) for call in operations)


def calls_named(ctx: ModuleContext, names: FrozenSet[str]) -> List[cst.Call]:
    """Every call in the module whose callee resolves to one of ``names``."""
    found = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.Call) and ctx.call_name(node) & names:
            found.append(node)
    return found


def bare_decorators(ctx: ModuleContext, names: FrozenSet[str]) -> List[cst.BaseExpression]:
    """``@retry`` used without parentheses."""
    found = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.Decorator) and isinstance(node.decorator, (cst.Name, cst.Attribute)):
            if ctx.qualified_names(node.decorator) & names:
                found.append(node.decorator)
    return found


def text_trigger(*words: str) -> Words:
    return Words(*words)


def mentions(node: cst.CSTNode, words: FrozenSet[str]) -> bool:
    """A syntactic trigger: a Name/Attribute whose last part is one of ``words``."""
    for child in walk(node):
        if isinstance(child, cst.Name) and child.value in words:
            return True
        if isinstance(child, cst.Attribute) and child.attr.value in words:
            return True
    return False


def last(expr: cst.BaseExpression) -> str:
    name = dotted_name(expr) or ""
    return name.rsplit(".", 1)[-1]

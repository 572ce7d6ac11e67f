"""Policies built away from their use (issue 12): ``@retry(**RETRY_ARGS)``, ``Retrying(**config)``,
``AsyncRetrying(**build_args())``, ``Retry(**kwargs)``, ``retry(**self.retry_args)``, and wait/stop
strategies returned by a helper (``wait=_wait()``) or set once on ``self``.

A ``**mapping`` argument is read when the mapping is bound once and every part of it is
visible: a dict literal or ``dict(...)`` call in a local, a module constant, a class attribute,
``self.x = {...}`` set once in ``__init__``, or the one ``return`` of a function of this module;
merges (``{**DEFAULTS, "stop": ...}``, ``dict(DEFAULTS, stop=...)``, ``DEFAULTS | overrides``) and
``setdefault``/``update``/``x["k"] = v`` written straight after the dict, in the same block, are
followed. A part that is not visible (``**user_kwargs`` from a parameter) leaves the keys it may
set unknown, and a dict assigned twice, mutated anywhere else, or handed to another call is not
read at all: unknown stays unknown.

A policy whose arguments are built elsewhere in the same file is reported where they are built
(where a reader fixes it) and says where it is used; built in another module (a constant the
program view reads), it is reported at the use and names the file and line.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import libcst as cst

if TYPE_CHECKING:
    from ...program import PolicyFactory

from ...model import Location, RetryPolicy
from ...narrowing import Trigger, Words
from ...syntax import call_args, dotted_name, walk
from ..context import ModuleContext
from .common import Args, decorated

#: How deep mappings and helpers are followed (``{**A}`` where ``A = {**B}`` …).
_DEPTH = 4
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"})
#: Calls that may see a mapping without changing it.
_READERS = ("print", "log", "logger", "logging", "LOG", "LOGGER", "_log", "_logger", "len", "repr", "str", "dict",
            "copy", "deepcopy", "sorted", "list")


@dataclass
class Mapping:
    """What a ``**mapping`` holds: keys known with their value; ``open``: other keys may be there."""

    keys: Dict[str, cst.BaseExpression] = field(default_factory=dict)
    open: bool = False
    #: Where it was built: a node of this module (None when it came from another module).
    node: Optional[cst.CSTNode] = None
    #: ``path:line`` when it was built in another module.
    elsewhere: str = ""

    def merge(self, other: Optional["Mapping"]) -> None:
        if other is None or other.open:
            # Every key seen so far may be overridden by the unknown part.
            self.keys.clear()
            self.open = True
        if other is not None:
            self.keys.update(other.keys)
            if other.elsewhere and not self.elsewhere:
                self.elsewhere = other.elsewhere


@dataclass(frozen=True)
class Built:
    """Where a call's ``**`` arguments were built."""

    #: The node holding them in this file (None: another module, see ``elsewhere``).
    node: Optional[cst.CSTNode]
    elsewhere: str
    #: The use as a reader would spell it: ``@retry(**RETRY_ARGS)``.
    use: str


def _unknown(name: str, key: str) -> cst.BaseExpression:
    """A value the code sets but that cannot be read: a node no scope knows (unknown to every reader)."""
    return cst.Subscript(cst.Name(name), [cst.SubscriptElement(cst.Index(cst.SimpleString(repr(key))))])


def expand(call: cst.Call, ctx: ModuleContext) -> Tuple[Args, Optional[Built]]:
    """The call's arguments with its ``**mappings`` written in where they can be read."""
    args = Args.of(call)
    stars = [a for a in call.args if a.star == "**"]
    if not stars or any(a.star == "*" for a in call.args):
        return args, None
    keywords = dict(args.keywords)
    opaque = False
    nodes: List[cst.CSTNode] = []
    elsewhere = ""
    for star in stars:
        mapping = mapping_of(star.value, ctx, 0)
        if mapping is None:
            opaque = True
            continue
        if mapping.open:
            opaque = True
        for key, value in mapping.keys.items():
            keywords.setdefault(key, value)
        if mapping.node is not None:
            nodes.append(mapping.node)
        elsewhere = elsewhere or mapping.elsewhere
    if not nodes and not elsewhere:
        return Args(call, args.positional, keywords, opaque), None
    node = nodes[0] if len(nodes) == 1 and not elsewhere else None
    built = Built(node, elsewhere if node is None else "", _spelled(call, ctx))
    if node is None and not elsewhere:
        built = None
    return Args(call, args.positional, keywords, opaque), built


def _spelled(call: cst.Call, ctx: ModuleContext) -> str:
    parts: List[str] = []
    for arg in call.args:
        if arg.star == "**":
            parts.append("**" + ctx.code(arg.value))
        elif "…" not in parts:
            parts.append("…")
    text = f"{ctx.code(call.func)}({', '.join(parts)})"
    return "@" + text if decorated(call, ctx) is not None else text


# ---------------------------------------------------------------- reading a mapping


def mapping_of(expr: cst.BaseExpression, ctx: ModuleContext, depth: int) -> Optional[Mapping]:
    """The mapping an expression builds; None when it cannot be read at all."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, cst.Dict):
        out = Mapping(node=expr)
        for element in expr.elements:
            if isinstance(element, cst.StarredDictElement):
                out.merge(mapping_of(element.value, ctx, depth + 1))
            elif isinstance(element.key, cst.SimpleString) and isinstance(element.key.evaluated_value, str):
                out.keys[element.key.evaluated_value] = element.value
            else:
                out.merge(None)  # a computed key may be any key
        return out
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        left = mapping_of(expr.left, ctx, depth + 1)
        if left is None:
            return None
        out = Mapping(dict(left.keys), left.open, expr, left.elsewhere)
        out.merge(mapping_of(expr.right, ctx, depth + 1))
        return out
    if isinstance(expr, cst.Call):
        return _call_mapping(expr, ctx, depth)
    if isinstance(expr, cst.Name):
        return _name_mapping(expr, ctx, depth)
    if isinstance(expr, cst.Attribute):
        value = attribute_value(expr, ctx)
        if value is None:
            return None
        found = mapping_of(value, ctx, depth + 1)
        return found
    return None


def _call_mapping(call: cst.Call, ctx: ModuleContext, depth: int) -> Optional[Mapping]:
    names = ctx.call_name(call)
    if "dict" in names:
        out = Mapping(node=call)
        for arg in call.args:
            if arg.star == "*":
                return None
            if arg.star == "**":
                out.merge(mapping_of(arg.value, ctx, depth + 1))
            elif arg.keyword is None:
                inner = mapping_of(arg.value, ctx, depth + 1)
                if inner is None:
                    return None
                out.merge(inner)
            else:
                out.keys[arg.keyword.value] = arg.value
        return out
    if names & {"copy.copy", "copy.deepcopy"} and len(call.args) == 1:
        return mapping_of(call.args[0].value, ctx, depth + 1)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "copy" and not call.args:
        return mapping_of(call.func.value, ctx, depth + 1)
    returned = returned_by(call, ctx)
    if returned is not None:
        return mapping_of(returned, ctx, depth + 1)
    return None


def _name_mapping(name: cst.Name, ctx: ModuleContext, depth: int) -> Optional[Mapping]:
    if ctx.home(name) is not name:
        return None  # a name inside a mapping written in from another module: not read here
    bindings = [b for b in ctx.bindings(name) if b.kind != "import"]
    if not bindings:
        if any(b.kind == "import" for b in ctx.bindings(name)):
            return _imported(name, ctx)
        value = _module_value(name.value, ctx)
        if value is None:
            return None
        statement = None
    elif len(bindings) == 1 and bindings[0].kind in ("assign", "annassign") and bindings[0].value is not None:
        binding = bindings[0]
        if isinstance(binding.node, cst.Assign) and (len(binding.node.targets) != 1
                                                      or not isinstance(binding.node.targets[0].target, cst.Name)):
            return None
        value, statement = binding.value, binding.node
    else:
        return None  # a parameter, assigned twice, a loop target …
    found = mapping_of(value, ctx, depth + 1)  # type: ignore[arg-type]
    if found is None:
        return None
    return _after_mutations(name, found, statement, ctx)


def _module_value(name: str, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    values: List[cst.BaseExpression] = []
    for statement in ctx.module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name) and target.target.value == name:
                            values.append(small.value)
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and isinstance(small.target, cst.Name) \
                        and small.target.value == name:
                    values.append(small.value)  # type: ignore[arg-type]
    return values[0] if len(values) == 1 and values[0] is not None else None


def _imported(name: cst.Name, ctx: ModuleContext) -> Optional[Mapping]:
    """A mapping constant of another module of the checked tree (the program view)."""
    reader = getattr(ctx, "foreign_expression", None)
    if reader is None:
        return None
    found = reader(name.value, name)
    if found is None or not isinstance(found[0], (cst.Dict, cst.Call)):
        return None
    node, where = found
    mapping = mapping_of(node, ctx, _DEPTH - 1)
    if mapping is None:
        return None
    mapping.node = None
    mapping.elsewhere = where
    return mapping


def _after_mutations(name: cst.Name, mapping: Mapping, statement: Optional[cst.CSTNode],
                     ctx: ModuleContext) -> Optional[Mapping]:
    """The mapping once the straight-line ``setdefault``/``update``/``x[k] = v`` after it ran;
    None when it is changed anywhere else (a branch, a loop, another function, after the use)
    or handed to another call."""
    function = ctx.enclosing_function(statement) if statement is not None else None
    owner: cst.CSTNode = function if function is not None else ctx.module
    block: List[cst.CSTNode] = []
    if statement is not None:
        line_of_statement = ctx.parent(statement)
        container = ctx.parent(line_of_statement) if line_of_statement is not None else None
        body = getattr(container, "body", None)
        if isinstance(body, (list, tuple)) and line_of_statement in body:
            block = list(body)[list(body).index(line_of_statement) + 1:]
    straight = {id(s) for s in block}
    use_line = next((a for a in (name, *ctx.ancestors(name)) if id(a) in straight), None)
    allowed = block[: block.index(use_line)] if use_line is not None else []
    out = Mapping(dict(mapping.keys), mapping.open, mapping.node, mapping.elsewhere)
    handled: set = set()
    for line in allowed:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if _apply(small, name.value, out, ctx):
                handled.add(id(small))
    if function is None and _changed_in_module(name.value, None, ctx):
        return None  # narrowing may have blanked the function that changes it: ask the whole file
    # Any other use that may change it, in any scope of its function (or of the module).
    for node in walk(owner, skip=()):
        if isinstance(node, cst.Name) and node.value == name.value and node is not name \
                and not _harmless(node, ctx, handled):
            return None
    return out


def _harmless(node: cst.Name, ctx: ModuleContext, handled: set) -> bool:
    """A use of the mapping's name that cannot change it (or a change already applied)."""
    parent = ctx.parent(node)
    for ancestor in ctx.ancestors(node):
        if id(ancestor) in handled:
            return True
    if isinstance(parent, cst.AssignTarget) or isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node:
        return True  # the binding itself (a second one makes it unreadable before this)
    if isinstance(parent, cst.Arg) and parent.star == "**":
        return True
    if isinstance(parent, cst.StarredDictElement):
        return True
    if isinstance(parent, cst.Return):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is node:
        if parent.attr.value in _MUTATORS:
            return False
        return parent.attr.value in ("get", "keys", "values", "items", "copy")
    if isinstance(parent, cst.Subscript) and parent.value is node:
        holder = ctx.parent(parent)
        if isinstance(holder, (cst.AssignTarget, cst.Del)) or isinstance(holder, cst.AugAssign):
            return False
        return True  # a read
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call):
            callee = dotted_name(call.func) or ""
            return callee.split(".")[0] in _READERS or callee.rsplit(".", 1)[-1] in ("debug", "info", "warning")
        return False
    if isinstance(parent, (cst.BinaryOperation, cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression,
                           cst.If, cst.BooleanOperation, cst.UnaryOperation)):
        return True  # ``DEFAULTS | overrides``, ``if kwargs``: reads
    if isinstance(parent, (cst.ImportAlias, cst.Global, cst.Nonlocal)):
        return False
    return False


def _changed_in_module(name: Optional[str], attr: Optional[str], ctx: ModuleContext, owner: str = "",
                       handed: bool = True) -> bool:
    """Whether the whole file (its ``ast``, before narrowing) changes module constant ``name``, or
    ``self.attr`` in class ``owner`` outside one assignment in ``__init__``."""
    import ast

    tree = getattr(ctx.program, "_tree", None)
    if tree is None:
        return True  # no whole-file view: nothing can be ruled out
    if attr is not None:
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner]
        if len(classes) != 1:
            return True
        scope: ast.AST = classes[0]
    else:
        scope = tree

    def target(node: ast.AST) -> bool:
        if attr is None:
            return isinstance(node, ast.Name) and node.id == name
        return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) \
            and node.value.id in ("self", "cls")

    assignments = 0
    for node in ast.walk(scope):
        if isinstance(node, ast.Global) and name in node.names:
            return True
        if isinstance(node, (ast.Subscript,)) and target(node.value) and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, ast.AugAssign) and target(node.target):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and target(func.value) and func.attr in _MUTATORS:
                return True
            callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            reader = callee in _READERS or callee in ("debug", "info", "warning", "error", "exception") \
                or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _READERS)
            passed = list(node.args) + [k.value for k in node.keywords if k.arg is not None]
            if handed and not reader and any(target(a) for a in passed):
                return True  # handed to a call that may change it
        if attr is not None and isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for each in targets:
                for sub in ast.walk(each):
                    if target(sub) and isinstance(getattr(sub, "ctx", None), ast.Store):
                        assignments += 1
    return assignments > 1


def _apply(small: cst.BaseSmallStatement, name: str, out: Mapping, ctx: ModuleContext) -> bool:
    """A straight-line change of the mapping, applied; False when ``small`` is not one."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and target.value.value == name:
            key = _key(target)
            if key is None:
                return False
            out.keys[key] = small.value
            return True
        return False
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return False
    call = small.value
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name):
        return False
    method = func.attr.value
    if method == "setdefault" and len(call.args) == 2 and not any(a.star or a.keyword for a in call.args):
        key_node = call.args[0].value
        if not isinstance(key_node, cst.SimpleString) or not isinstance(key_node.evaluated_value, str):
            return False
        key = key_node.evaluated_value
        if key not in out.keys:
            if out.open:
                out.keys[key] = _unknown(name, key)  # the caller's value or this default
            else:
                out.keys[key] = call.args[1].value
        return True
    if method == "update":
        for arg in call.args:
            if arg.star == "*":
                return False
            if arg.star == "**" or arg.keyword is None:
                out.merge(mapping_of(arg.value, ctx, 1))
            else:
                out.keys[arg.keyword.value] = arg.value
        return True
    return False


def _key(target: cst.Subscript) -> Optional[str]:
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    key = target.slice[0].slice.value
    if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
        return key.evaluated_value
    return None


# ---------------------------------------------------------------- attributes and helpers


#: Per module: (class, attribute) → what ``attribute_value`` found (a class is walked once per attribute).
_ATTRIBUTES: "weakref.WeakKeyDictionary[ModuleContext, Dict[Tuple[int, str], Optional[cst.BaseExpression]]]" = \
    weakref.WeakKeyDictionary()


def attribute_value(expr: cst.Attribute, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """``self.x``/``cls.x`` set once in the class (``__init__`` or the class body) to a dict or
    a call, ``Class.X`` likewise; None when set twice, anywhere else, or changed in place."""
    receiver = dotted_name(expr.value)
    if receiver is None:
        return None
    attr = expr.attr.value
    if receiver in ("self", "cls"):
        owner = _enclosing_class_node(expr, ctx)
    else:
        owner = _class_named(receiver, ctx)
    if owner is None:
        return None
    cache = _ATTRIBUTES.setdefault(ctx, {})
    key = (id(owner), attr)
    if key not in cache:
        cache[key] = _attribute_value(owner, attr, receiver, ctx)
    return cache[key]


def _attribute_value(owner: cst.ClassDef, attr: str, receiver: str, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    if _overridden_below(owner.name.value, attr, ctx):
        return None
    values: List[Tuple[cst.CSTNode, cst.BaseExpression]] = []
    for statement in owner.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    if any(isinstance(t, cst.Name) and t.value == attr for t in targets) and small.value is not None:
                        values.append((small, small.value))
    for node in walk(owner, skip=(cst.ClassDef,)):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                if _self_attr(target, attr):
                    function = ctx.enclosing_function(node)
                    if isinstance(node, cst.Assign) and function is not None and function.name.value == "__init__" \
                            and len(node.targets) == 1:
                        values.append((node, node.value))
                    else:
                        return None
                elif isinstance(target, cst.Subscript) and _self_attr(target.value, attr):
                    return None  # ``self.x["stop"] = …``
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _self_attr(node.func.value, attr) \
                and node.func.attr.value in _MUTATORS:
            return None
    if len(values) != 1:
        return None
    value = values[0][1]
    handed = not isinstance(value, cst.Call) or bool(ctx.call_name(value) & {"dict"})  # a mapping may be changed
    if receiver in ("self", "cls") and _changed_in_module(None, attr, ctx, owner.name.value, handed):
        return None  # changed in a method narrowing blanked
    value = values[0][1]
    if isinstance(value, (cst.Dict, cst.Call, cst.BinaryOperation)):
        return value
    return None


def _self_attr(node: cst.CSTNode, attr: str) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value in ("self", "cls") \
        and node.attr.value == attr


def _enclosing_class_node(node: cst.CSTNode, ctx: ModuleContext) -> Optional[cst.ClassDef]:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.ClassDef):
            return ancestor
    return None


def _class_named(name: str, ctx: ModuleContext) -> Optional[cst.ClassDef]:
    found = [s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == name]
    return found[0] if len(found) == 1 else None


def _overridden_below(owner: str, member: str, ctx: ModuleContext) -> bool:
    for statement in ctx.module.body:
        if isinstance(statement, cst.ClassDef) and any(dotted_name(b.value) == owner for b in statement.bases):
            for node in walk(statement, skip=()):
                if isinstance(node, cst.FunctionDef) and node.name.value == member:
                    return True
                if isinstance(node, cst.Name) and node.value == member:
                    return True
                if isinstance(node, cst.Attribute) and node.attr.value == member:
                    return True
    return False


def returned_by(call: cst.Call, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """What a function of this module returns, when its body is straight-line code ending in its
    one ``return`` of a dict or a call (``def _wait(): return wait_exponential(max=10)``)."""
    func = call.func
    function: Optional[cst.FunctionDef] = None
    if isinstance(func, cst.Name):
        bindings = ctx.bindings(func)
        if len(bindings) == 1 and bindings[0].kind == "def" and isinstance(bindings[0].node, cst.FunctionDef):
            function = bindings[0].node
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        owner = _enclosing_class_node(call, ctx)
        if owner is not None and not _overridden_below(owner.name.value, func.attr.value, ctx):
            methods = [s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value]
            if len(methods) == 1:
                function = methods[0]
    if function is None or function.asynchronous is not None:
        return None
    if any(_decorator_name(d) not in ("staticmethod", "classmethod", "cache", "lru_cache", "functools.cache",
                                      "functools.lru_cache", "cached_property", "functools.cached_property")
           for d in function.decorators):
        return None
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    returns = [n for n in walk(body) if isinstance(n, cst.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    statements = list(body.body)
    last = statements[-1] if statements else None
    if not (isinstance(last, cst.SimpleStatementLine) and returns[0] in last.body):
        return None
    if any(not isinstance(s, cst.SimpleStatementLine) for s in statements):
        return None  # a branch or a loop before the return: not one value
    value = returns[0].value
    if isinstance(value, (cst.Dict, cst.Call, cst.Name, cst.BinaryOperation)):
        return value
    return None


def _decorator_name(decorator: cst.Decorator) -> str:
    target = decorator.decorator
    if isinstance(target, cst.Call):
        target = target.func
    return dotted_name(target) or ""


def strategy_of(expr: cst.BaseExpression, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """A wait/stop strategy built away from its use: ``_wait()`` returning ``wait_exponential(...)``,
    ``self.wait`` set once in ``__init__``; the expression that builds it, else None."""
    if isinstance(expr, cst.Call):
        value = returned_by(expr, ctx)
    elif isinstance(expr, cst.Attribute):
        value = attribute_value(expr, ctx)
    elif isinstance(expr, cst.Name) and ctx.home(expr) is expr and any(b.kind == "import" for b in ctx.bindings(expr)):
        # ``from .policies import WAIT``: a strategy built in another module of the tree.
        reader = getattr(ctx, "foreign_expression", None)
        found = reader(expr.value, expr) if reader is not None else None
        if found is not None and isinstance(found[0], cst.Call) and _is_strategy(found[0], ctx):
            return found[0]
        return None
    else:
        return None
    if isinstance(value, cst.Call) and _is_strategy(value, ctx):
        _note(expr, value, ctx)
        return value
    return None


_LIBRARIES = ("tenacity.", "backoff.", "redis.", "urllib3.", "requests.", "google.api_core.")


def _is_strategy(call: cst.Call, ctx: ModuleContext) -> bool:
    """A strategy or policy object of a retry library (not ``min(...)``, not ``dict(...)``)."""
    names = ctx.call_name(call)
    if any(n.startswith(_LIBRARIES) for n in names):
        return True
    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    return name != "dict" and (name in _STRATEGY_NAMES or name.startswith(_STRATEGY_PREFIXES))


def _note(use: cst.CSTNode, value: cst.CSTNode, ctx: ModuleContext) -> None:
    """For ``explain``: the strategy's builder and its line."""
    from ...program import Value

    try:
        line = ctx.location(value).line
    except Exception:  # noqa: BLE001 - a position is only for the message
        return
    text = ctx.code(value)
    shown = f"builds `{text}`"
    entry = (use, Value(text, shown, ctx.path, line, shown=shown))
    if entry[1] not in [v for u, v in ctx.outside_values if u is use]:
        ctx.outside_values.append(entry)


# ---------------------------------------------------------------- placing the report


def place(policy: RetryPolicy, built: Optional[Built], ctx: ModuleContext) -> RetryPolicy:
    """Report a policy whose arguments are built elsewhere in this file where they are built;
    one built in another module stays at its use and says where."""
    if built is None:
        return policy
    if built.node is None:
        return policy.with_(description=f"{policy.description} (arguments built in {built.elsewhere})")
    try:
        where = ctx.location(built.node)
    except Exception:  # noqa: BLE001
        return policy
    old = policy.location
    if where.line == old.line:
        return policy  # built on the same line: nothing to move

    def moved(location: Optional[Location]) -> Optional[Location]:
        return where if location == old else location

    errors = tuple(replace(e, location=moved(e.location)) for e in policy.errors)
    statuses = policy.statuses
    if statuses is not None and statuses.location == old:
        statuses = replace(statuses, location=where)
    from ...program import Value

    stars = ", ".join(part for part in built.use[built.use.index("(") + 1:-1].split(", ") if part.startswith("**"))
    shown = f"arguments from `{stars}`"
    ctx.outside_values.append((policy.anchor, Value("", shown, ctx.path, where.line, shown=shown)))
    return policy.with_(
        location=where,
        delay_location=moved(policy.delay_location),
        errors=errors,
        statuses=statuses,
        header_lines=tuple(sorted(set(where.lines) | set(policy.header_lines))),
        description=f"{policy.source} policy built here (used by `{built.use}` at line {old.line})",
    )


def policies_of(calls, ctx: ModuleContext, policy_of) -> List[RetryPolicy]:
    """``policy_of(call, args, ctx)`` for each call, its ``**mappings`` written in (:func:`expand`),
    reported where they were built (:func:`place`), one report per place (:func:`merge`); a call
    a decorator factory builds from its parameters is judged at each use (:func:`factory_uses`)."""
    placed = []
    for call in calls:
        uses = factory_uses(call, ctx, policy_of)
        if uses is not None:
            placed.extend((policy, None) for policy in uses)
            continue
        args, built = expand(call, ctx)
        policy = policy_of(call, args, ctx)
        if policy is not None:
            placed.append((place(policy, built, ctx), built))
    return merge(placed)


def merge(placed: List[Tuple[RetryPolicy, Optional[Built]]]) -> List[RetryPolicy]:
    """One report per place a policy is built: its other uses are named in it and judged there."""
    groups: Dict[Tuple[str, int, int], List[int]] = {}
    out = [p for p, _ in placed]
    for index, (policy, built) in enumerate(placed):
        if built is not None and built.node is not None and "built here" in policy.description:
            groups.setdefault((policy.source, policy.location.line, policy.location.column), []).append(index)
    for indexes in groups.values():
        if len(indexes) < 2:
            continue
        uses = [(placed[i][1].use, placed[i][0].anchor) for i in indexes]  # type: ignore[union-attr]
        first = out[indexes[0]]
        lines = []
        for i in indexes:
            use = placed[i][1].use  # type: ignore[union-attr]
            line = _use_line(placed[i][0].description)
            lines.append(f"`{use}` at line {line}")
        description = f"{first.source} policy built here (used by {_join(lines)})"
        for position, i in enumerate(indexes):
            policy = out[i].with_(description=description)
            if position > 0:
                policy = policy.with_(judged_at=f"line {first.location.line}")
            out[i] = policy
        del uses
    return out


def _use_line(description: str) -> str:
    return description.rsplit("at line ", 1)[-1].rstrip(")")


def _join(items: List[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ---------------------------------------------------------------- decorator factories


@dataclass(frozen=True)
class Factory:
    """A function whose one ``return`` builds a policy from its parameters:
    ``def retry_pattern(wait_gen, exc, **kw): return backoff.on_exception(wait_gen, exc, jitter=None, **kw)``."""

    function: cst.FunctionDef
    params: Dict[str, cst.Param]
    #: The ``**kwargs`` parameter's name, handed on to the policy as ``**kwargs``.
    kwargs: str


def factory_of(call: cst.Call, ctx: ModuleContext) -> Optional[Factory]:
    """The factory ``call`` is the returned value of, when the call reads its parameters."""
    statement = ctx.parent(call)
    function = ctx.enclosing_function(call)
    if not isinstance(statement, cst.Return) or function is None or ctx.enclosing_class(function) is not None:
        return None
    returns = [n for n in walk(function.body) if isinstance(n, cst.Return)]
    if returns != [statement] or isinstance(function.params.star_arg, cst.Param):
        return None
    declared = [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]
    params = {p.name.value: p for p in declared}
    star = function.params.star_kwarg
    kwargs = star.name.value if isinstance(star, cst.Param) else ""
    read = {n.value for n in walk(call, skip=()) if isinstance(n, cst.Name)}
    if not read & (set(params) | {kwargs} - {""}):
        return None
    for node in walk(function.body):
        targets = node.targets if isinstance(node, cst.Assign) else [node] if isinstance(
            node, (cst.AugAssign, cst.AnnAssign)) else []
        for target in targets:
            if isinstance(target.target, cst.Name) and target.target.value in params | ({kwargs: None} if kwargs else {}):
                return None  # a parameter changed before the return: not the value a use passes
    return Factory(function, params, kwargs)


def _applications(factory: Factory, ctx: ModuleContext) -> List[cst.Call]:
    """The calls of the factory in this module (``@retry_pattern(...)``, ``retry_pattern(...)(f)``)."""
    name = factory.function.name.value
    found = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
            bindings = ctx.bindings(node.func)
            if len(bindings) == 1 and bindings[0].node is factory.function:
                found.append(node)
    return found


def _bind(factory: Factory, use: cst.Call) -> Optional[Tuple[Dict[str, cst.BaseExpression], Dict[str, cst.BaseExpression]]]:
    """What one use passes for each parameter (defaults for the rest), and the keywords its
    ``**kwargs`` collects; None when that cannot be read (``*args`` at the use, a missing argument)."""
    if any(arg.star for arg in use.args):
        return None
    positional, keywords = call_args(use)
    params = factory.function.params
    order = [p.name.value for p in (*params.posonly_params, *params.params)]
    if len(positional) > len(order):
        return None
    bound: Dict[str, cst.BaseExpression] = dict(zip(order, positional))
    extras: Dict[str, cst.BaseExpression] = {}
    for key, value in keywords.items():
        if key in factory.params and key not in bound:
            bound[key] = value
        elif factory.kwargs:
            extras[key] = value
        else:
            return None
    for name, param in factory.params.items():
        if name not in bound:
            if param.default is None:
                return None
            bound[name] = param.default
    return bound, extras


def factory_uses(call: cst.Call, ctx: ModuleContext, policy_of) -> Optional[List[RetryPolicy]]:
    """A policy built by a decorator factory from its parameters, judged at each call of the
    factory in this module with the values that call passes (the schedule is the use's: one site
    may pass ``backoff.expo``, another ``backoff.constant``) and reported there, naming the
    factory. None when ``call`` is not so built or nothing here calls the factory (a public
    helper: judged where built, as before)."""
    factory = factory_of(call, ctx)
    if factory is None:
        return None
    uses = _applications(factory, ctx)
    if not uses:
        # applied in other modules only: judged at each of those uses, with its values
        return [] if ctx.program.decorates_elsewhere(factory.function.name.value) else None
    args, _ = expand(call, ctx)
    own = policy_of(call, args, ctx)
    out: List[Tuple[RetryPolicy, cst.Call]] = []
    for use in uses:
        binding = _bind(factory, use)
        if binding is None:
            continue  # unknown values: nothing to judge at this use
        bound, extras = binding
        args = substituted_args(call, factory, bound, extras)
        # ``stop_after_attempt(attempts)``: parameters inside the arguments, read through by resolve()
        nested = {n: bound[n.value] for a in call.args for n in walk(a.value, skip=(), include_root=False)
                  if isinstance(n, cst.Name) and n.value in bound}
        with ctx.substituted(nested):
            policy = policy_of(call, args, ctx)
        if policy is not None:
            out.append((policy, use))
    if own is not None and all(_same_schedule(policy, own) for policy, _ in out):
        return None  # no use's values change the bound or the schedule: judged once, where built
    return [_at_use(policy, use, factory, ctx) for policy, use in out]


def _same_schedule(policy: RetryPolicy, own: RetryPolicy) -> bool:
    return policy.bound == own.bound and replace(policy.delay, text="") == replace(own.delay, text="")


def substituted_args(call: cst.Call, factory: "Factory | PolicyFactory", bound: Dict[str, cst.BaseExpression],
                     extras: Dict[str, cst.BaseExpression]) -> Args:
    def given(expr: cst.BaseExpression) -> cst.BaseExpression:
        return bound.get(expr.value, expr) if isinstance(expr, cst.Name) else expr

    base = Args.of(call)
    keywords = {key: given(value) for key, value in base.keywords.items()}
    opaque = False
    for arg in call.args:
        if arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value == factory.kwargs:
            for key, value in extras.items():
                keywords.setdefault(key, value)
        elif arg.star:
            opaque = True
    return Args(call, [given(value) for value in base.positional], keywords, opaque)


def _at_use(policy: RetryPolicy, use: cst.Call, factory: Factory, ctx: ModuleContext) -> RetryPolicy:
    """The factory's policy moved to the use that gave its values."""
    from ...program import Value

    where = ctx.location(use)
    old = policy.location
    target = decorated(use, ctx)

    def moved(location: Optional[Location]) -> Optional[Location]:
        return where if location == old else location

    statuses = policy.statuses
    if statuses is not None and statuses.location == old:
        statuses = replace(statuses, location=where)
    name = factory.function.name.value
    shown = f"built by `{name}(...)`"
    ctx.outside_values.append((use, Value("", shown, ctx.path, old.line, shown=shown)))
    return policy.with_(
        location=where,
        delay_location=moved(policy.delay_location),
        errors=tuple(replace(e, location=moved(e.location)) for e in policy.errors),
        statuses=statuses,
        header_lines=tuple(where.lines),
        extent=ctx.location(target) if target is not None else where,
        operation=target.name.value if target is not None else policy.operation,
        is_async=bool(target is not None and target.asynchronous is not None),
        anchor=use,
        description=f"{policy.description} (built by `{name}(...)` at line {old.line})",
    )


# ---------------------------------------------------------------- narrowing


_STRATEGY_PREFIXES = ("wait_", "stop_", "retry_")
_STRATEGY_NAMES = frozenset({"dict", "expo", "fibo", "constant", "Retry", "AsyncRetry", "Retrying", "AsyncRetrying",
                             "ExponentialBackoff", "FullJitterBackoff", "EqualJitterBackoff", "ConstantBackoff",
                             "NoBackoff", "DecorrelatedJitterBackoff", "ExponentialWithJitterBackoff"})


def _builds_policy(value) -> bool:  # noqa: ANN001 - an ``ast`` expression
    """A dict, ``dict(...)``, or a call of a strategy's name (``wait_exponential(...)``)."""
    import ast

    if isinstance(value, ast.Dict):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        return _builds_policy(value.left) or _builds_policy(value.right)
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in _STRATEGY_NAMES or name.startswith(_STRATEGY_PREFIXES)


def _confirm_return(statement, source) -> bool:  # noqa: ANN001
    return _builds_policy(getattr(statement, "value", None))


def _confirm_self_mapping(statement, source) -> bool:  # noqa: ANN001
    import ast

    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return False
    target = statement.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return False
    return _builds_policy(statement.value) and source.text.count(f"self.{target.attr}") >= 2


#: Helpers that return a mapping or a strategy are kept when kept code calls them; ``__init__``
#: assignments of ``self.x = {...}``/``self.x = wait_...(...)`` are kept as context.
_WORDS = Words("retry", "Retry", "backoff", "tenacity")
TRIGGERS = [
    Trigger(text=_WORDS, statements=(__import__("ast").Return,), confirm=_confirm_return, context=True, called=True),
    Trigger(text=_WORDS, statements=(__import__("ast").Assign,), confirm=_confirm_self_mapping, context=True),
]

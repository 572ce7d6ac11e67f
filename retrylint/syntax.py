"""Small helpers over libcst nodes: walking, literals, statements and control flow."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Callable, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple, Type, Union

import libcst as cst

#: Nodes whose bodies run at another time: never part of the enclosing code's flow.
DEFERRED: Tuple[Type[cst.CSTNode], ...] = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
LOOPS: Tuple[Type[cst.CSTNode], ...] = (cst.For, cst.While)
COMPREHENSIONS: Tuple[Type[cst.CSTNode], ...] = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)

# Outcomes of running a block of statements.
FALL = "fall"
CONTINUE = "continue"
BREAK = "break"
RETURN = "return"
RAISE = "raise"
EXITS = frozenset({BREAK, RETURN, RAISE})

PROCESS_EXITS = frozenset({"sys.exit", "os._exit", "exit", "quit", "os.abort", "pytest.fail", "pytest.skip"})
#: Calls named for raising (``six.reraise``, ``raise_from``, tooz's ``utils.raise_with_cause``,
#: ``self._raise_error(e)``) raise; ``raise_for_status()`` / ``raise_if_...`` raise only sometimes.
RAISER_NAME = re.compile(r"^_*(re)?raise(?!_(for|if|on|unless|when)(_|$))(_\w+)?$")


_FIELDS: dict = {}
_IS_NODE: dict = {}


def _is_node_type(kind: type) -> bool:
    known_answer = _IS_NODE.get(kind)
    if known_answer is None:
        known_answer = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known_answer


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """Child nodes, read from the dataclass fields.

    libcst's own ``children`` property runs a visitor per call, and ``isinstance`` against
    its abstract base classes is slow; this caches both per type. The whole analysis walks
    trees a lot.
    """
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    out: List[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            out.extend(item for item in value if _is_node_type(type(item)))
        elif _is_node_type(kind):
            out.append(value)
    return out


def walk(
    node: cst.CSTNode,
    *,
    skip: Tuple[Type[cst.CSTNode], ...] = DEFERRED,
    include_root: bool = True,
) -> Iterator[cst.CSTNode]:
    """Pre-order walk that does not descend into ``skip`` nodes (the root is always entered)."""
    stack: List[cst.CSTNode] = [node]
    first = True
    while stack:
        current = stack.pop()
        if not first or include_root:
            yield current
        if not first and isinstance(current, skip):
            continue
        first = False
        stack.extend(reversed(children(current)))


def walk_local(node: cst.CSTNode, include_root: bool = True) -> Iterator[cst.CSTNode]:
    """Walk the code that runs as part of ``node``'s own iteration: no nested defs or loops."""
    return walk(node, skip=DEFERRED + LOOPS, include_root=include_root)


def unwrap_await(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Await):
        expr = expr.expression
    return expr


def dotted_name(expr: Optional[cst.CSTNode]) -> Optional[str]:
    """``a.b.c`` for Name/Attribute chains, else None."""
    parts: List[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def last_name(expr: Optional[cst.CSTNode]) -> Optional[str]:
    """The last component of a called name: ``self._backoff`` → ``_backoff``."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def number(expr: Optional[cst.CSTNode]) -> Optional[float]:
    """A numeric literal (also negative, also ``1_000``), else None."""
    if isinstance(expr, cst.Integer):
        return float(expr.evaluated_value)
    if isinstance(expr, cst.Float):
        return float(expr.evaluated_value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = number(expr.expression)
        return -inner if inner is not None else None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Plus):
        return number(expr.expression)
    return None


def is_true_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name) and expr.value == "True":
        return True
    value = number(expr)
    return value is not None and value != 0


def call_args(call: cst.Call) -> Tuple[List[cst.BaseExpression], dict]:
    """Positional and keyword arguments (``*args``/``**kwargs`` are left out)."""
    positional: List[cst.BaseExpression] = []
    keywords: dict = {}
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            keywords[arg.keyword.value] = arg.value
        else:
            positional.append(arg.value)
    return positional, keywords


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def argument(call: cst.Call, index: int, keyword: str) -> Optional[cst.BaseExpression]:
    positional, keywords = call_args(call)
    if keyword in keywords:
        return keywords[keyword]
    if index < len(positional):
        return positional[index]
    return None


# ---------------------------------------------------------------- statements

Block = Union[cst.BaseSuite, Sequence[cst.BaseStatement]]


def statements(block: Optional[cst.CSTNode]) -> List[cst.CSTNode]:
    """The statements of a suite, simple statements split out of their lines."""
    if block is None:
        return []
    if isinstance(block, (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler)):
        block = block.body
    if isinstance(block, cst.IndentedBlock):
        body: Sequence[cst.CSTNode] = block.body
    elif isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    elif isinstance(block, (list, tuple)):
        body = block
    else:
        return []
    out: List[cst.CSTNode] = []
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            out.extend(statement.body)
        else:
            out.append(statement)
    return out


def if_branches(node: cst.If) -> Tuple[List[cst.CSTNode], Optional[List[cst.CSTNode]]]:
    """Body statements and else statements (an ``elif`` is one nested If)."""
    orelse = node.orelse
    if orelse is None:
        return statements(node.body), None
    if isinstance(orelse, cst.If):
        return statements(node.body), [orelse]
    return statements(node.body), statements(orelse.body)


def outcomes(stmts: Iterable[cst.CSTNode]) -> FrozenSet[str]:
    """How a sequence of statements can end: fall through, continue, break, return, raise."""
    current = {FALL}
    for statement in stmts:
        if FALL not in current:
            break
        current.discard(FALL)
        current |= statement_outcomes(statement)
    return frozenset(current)


def statement_outcomes(node: cst.CSTNode) -> FrozenSet[str]:
    if isinstance(node, cst.Return):
        return frozenset({RETURN})
    if isinstance(node, cst.Raise):
        return frozenset({RAISE})
    if isinstance(node, cst.Break):
        return frozenset({BREAK})
    if isinstance(node, cst.Continue):
        return frozenset({CONTINUE})
    if isinstance(node, cst.Expr):
        value = unwrap_await(node.value)
        if isinstance(value, cst.Call) and (dotted_name(value.func) in PROCESS_EXITS
                                            or RAISER_NAME.match(last_name(value.func) or "")):
            return frozenset({RAISE})
        return frozenset({FALL})
    if isinstance(node, cst.If):
        body, orelse = if_branches(node)
        result = set(outcomes(body))
        result |= outcomes(orelse) if orelse is not None else {FALL}
        return frozenset(result)
    if isinstance(node, cst.Try):
        body = outcomes(statements(node.body))
        result = set(body - {FALL})
        if FALL in body:
            result |= outcomes(statements(node.orelse)) if node.orelse else {FALL}
        for handler in node.handlers:
            result |= outcomes(statements(handler.body))
        if node.finalbody is not None:
            final = outcomes(statements(node.finalbody))
            if FALL not in final:
                return final
        return frozenset(result)
    if isinstance(node, cst.TryStar):
        result = set(outcomes(statements(node.body)))
        for handler in node.handlers:
            result |= outcomes(statements(handler.body))
        return frozenset(result)
    if isinstance(node, cst.With):
        return outcomes(statements(node.body))
    if isinstance(node, LOOPS):
        inner = outcomes(statements(node.body))
        result = set(inner & {RETURN, RAISE})
        infinite = isinstance(node, cst.While) and is_true_literal(node.test)
        if not infinite or BREAK in inner:
            result.add(FALL)
        return frozenset(result)
    if isinstance(node, cst.Match):
        result = {FALL}
        for case in node.cases:
            result |= outcomes(statements(case.body))
        return frozenset(result)
    return frozenset({FALL})


def find_all(node: cst.CSTNode, kind: Union[Type[cst.CSTNode], Tuple[Type[cst.CSTNode], ...]], local: bool = True) -> List[cst.CSTNode]:
    walker: Callable[..., Iterator[cst.CSTNode]] = walk_local if local else walk
    return [n for n in walker(node) if isinstance(n, kind)]


def names_in(node: cst.CSTNode) -> List[str]:
    """Dotted names read in an expression (``self.retries``, ``attempt``)."""
    out: List[str] = []
    for n in walk(node):
        if isinstance(n, (cst.Name, cst.Attribute)):
            name = dotted_name(n)
            if name is not None:
                out.append(name)
    return out


def statement_calls(region: cst.CSTNode) -> Iterator[cst.Call]:
    """Calls that are a step of ``region`` (``f(x)``, ``y = f(x)``, ``await f(x)``), not ones
    nested in a ``raise``, a test or an argument; nested definitions are skipped."""
    for node in walk(region, skip=DEFERRED):
        if isinstance(node, (cst.Expr, cst.Assign)):
            value = unwrap_await(node.value)
            if isinstance(value, cst.Call):
                yield value


def ast_dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for an ``ast`` Name/Attribute chain (the ``ast`` twin of :func:`dotted_name`)."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def literal_truth(node: cst.BaseExpression) -> Optional[bool]:
    """Whether a literal is true (``True``, ``False``, ``None``, a number); None when unknown."""
    if isinstance(node, cst.Name):
        return node.value == "True" if node.value in ("True", "False", "None") else None
    value = number(node)
    return bool(value) if value is not None else None

"""Status classifiers: functions that answer "is this HTTP status one to retry?".

Generated SDK clients (Stainless, Fern, Speakeasy) and many hand-written ones decide a retry with
a small predicate kept away from the loop::

    def _should_retry(response):
        retryable_400s = [429, 408, 409]
        return response.status_code >= 500 or response.status_code in retryable_400s

This module reads such a predicate from the ``ast`` of its module (cheap, serialisable, and
available for modules other than the checked one) and returns the statuses for which it returns
true, so that ``if self._should_retry(response): continue`` is read like the status test it
stands for. Only straight predicates are read: status tests of one parameter, ``if``/``return``
and constant locals. A test on something else (a header, a flag) is taken to be false: the
predicate's answer when the server says nothing more. Anything else makes the function no
classifier (unknown, never guessed).
"""

from __future__ import annotations

import ast
import http
import re
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from .syntax import ast_dotted_name as _dotted

ALL_STATUSES: FrozenSet[int] = frozenset(range(100, 600))
#: Attributes that hold an HTTP status on a response or an HTTP error.
_STATUS_ATTRS = frozenset({"status_code", "status", "status_int", "http_status"})
_STATUS_PARAM = re.compile(r"(http_)?(status|status_code|code|http_code|response_status|resp_status)")
_CONSTANT_STATUS = re.compile(r"HTTP_(\d{3})")
_MAX_STATEMENTS = 40
#: Flags of httpx/requests responses: the statuses for which they are true.
FLAG_ATTRS = {
    "ok": frozenset(range(100, 400)),
    "is_success": frozenset(range(200, 300)),
    "is_error": frozenset(range(400, 600)),
    "is_server_error": frozenset(range(500, 600)),
    "is_client_error": frozenset(range(400, 500)),
    "is_redirect": frozenset(range(300, 400)),
}


def named_status(name: str, qualified: "set[str]") -> Optional[int]:
    """The status a name stands for: ``status.HTTP_429_TOO_MANY_REQUESTS``, ``HTTPStatus.OK``,
    ``requests.codes.ok`` (``qualified``: the names it may resolve to)."""
    last = name.rsplit(".", 1)[-1]
    match = _CONSTANT_STATUS.match(last)
    if match:
        return int(match.group(1))
    parts = name.split(".")
    # ``requests.codes.ok`` with ``requests`` imported inside a function (langchain's
    # graph_mermaid), where no qualified name resolves: the written name says it
    if any("HTTPStatus" in q or "codes" in q for q in qualified) or len(parts) > 1 and parts[-2] in ("codes", "HTTPStatus"):
        try:
            return int(http.HTTPStatus[last.upper()])
        except KeyError:
            return _REQUESTS_CODE_ALIASES.get(last.lower())
    return None


#: ``requests.codes`` names that are no ``HTTPStatus`` member.
_REQUESTS_CODE_ALIASES = {
    "too_many": 429,
    "too_many_requests": 429,
    "unavailable": 503,
    "server_error": 500,
    "bad_gateway": 502,
    "gateway_timeout": 504,
    "not_found": 404,
    "ok": 200,
    "created": 201,
    "accepted": 202,
    "no_content": 204,
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "conflict": 409,
    "request_timeout": 408,
}


class _Unreadable(Exception):
    """The predicate decides with something we cannot read."""


@dataclass(frozen=True)
class Classifier:
    """A predicate of one parameter's HTTP status."""

    param: str  # the parameter it tests (``self``/``cls`` left out of ``index``)
    index: int  # its position among the parameters after ``self``/``cls``
    statuses: Tuple[int, ...]  # the statuses for which it returns true
    line: int


def read_classifier(func: ast.AST, method: bool, constants: Dict[str, Tuple[Any, int]]) -> Optional[Classifier]:
    """The statuses ``func`` returns true for, when it is a straight predicate of one parameter."""
    body = list(func.body)  # type: ignore[attr-defined]
    if len(body) > _MAX_STATEMENTS or not any(isinstance(n, ast.Return) for n in body):
        return None
    args = func.args  # type: ignore[attr-defined]
    params = [a.arg for a in list(args.posonlyargs) + list(args.args)]
    if method and params:
        params = params[1:]
    params += [a.arg for a in args.kwonlyargs]
    for index, param in enumerate(params):
        reader = _Reader(param, constants)
        try:
            statuses = reader.run(body, ALL_STATUSES)
        except (_Unreadable, RecursionError):
            continue
        if reader.read and statuses is not None:
            return Classifier(param, index, tuple(sorted(statuses)), func.lineno)  # type: ignore[attr-defined]
    return None


class _Reader:
    def __init__(self, param: str, constants: Dict[str, Tuple[Any, int]]) -> None:
        self.param = param
        self.names = {param} if _STATUS_PARAM.fullmatch(param) else set()  # names that hold the status
        self.derived: set = set()  # names computed from the status (``family = status // 100``)
        self.env: Dict[str, Any] = {name: value for name, (value, _) in constants.items()}
        self.read = False  # at least one status test was read

    def run(self, stmts: Sequence[ast.stmt], remaining: FrozenSet[int]) -> FrozenSet[int]:
        """The statuses of ``remaining`` for which these statements return true."""
        for index, statement in enumerate(stmts):
            rest = list(stmts[index + 1:])
            if isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and isinstance(
                statement.value, (ast.Constant, ast.Call)
            ):
                continue  # a docstring, logging
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name):
                self._assign(statement.targets[0].id, statement.value)
                continue
            if isinstance(statement, ast.If):
                tested = self.statuses(statement.test)
                if tested is None:
                    # a header or a flag: its default answer is "no", the status decides
                    if statement.orelse or self._mentions(statement) or not _returns(statement.body):
                        raise _Unreadable
                    continue
                return self.run(statement.body + rest, remaining & tested) | \
                    self.run(statement.orelse + rest, remaining - tested)
            if isinstance(statement, ast.Return):
                return self._returned(statement.value, remaining)
            raise _Unreadable  # a loop, a try, a raise: not a straight predicate
        return frozenset()  # falls off the end: returns None

    def _returned(self, value: Optional[ast.expr], remaining: FrozenSet[int]) -> FrozenSet[int]:
        if value is None:
            return frozenset()
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            return remaining if value.value else frozenset()
        tested = self.statuses(value)
        if tested is None:
            if remaining and all(500 <= s < 600 for s in remaining):
                return remaining  # ``return self.oauth_manager is not None`` for 511: server errors only
            raise _Unreadable
        return remaining & tested

    def _assign(self, name: str, value: ast.expr) -> None:
        if self._is_status(value):
            self.names.add(name)
            return
        self.names.discard(name)
        self.derived.discard(name)
        self.env.pop(name, None)
        folded = self._collection(value)
        if folded is not None:
            self.env[name] = tuple(folded)
        elif self._mentions(value):
            self.derived.add(name)  # read only through a test we cannot read

    # -- tests

    def statuses(self, test: ast.expr) -> Optional[FrozenSet[int]]:
        """Statuses for which ``test`` is true; None when it does not look at the status."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.statuses(test.operand)
            return None if inner is None else ALL_STATUSES - inner
        if isinstance(test, ast.BoolOp):
            parts = [self.statuses(v) for v in test.values]
            if all(p is None for p in parts):
                return None
            if any(p is None for p in parts):
                raise _Unreadable  # a status test joined with something else
            result = parts[0]
            for part in parts[1:]:
                result = result & part if isinstance(test.op, ast.And) else result | part  # type: ignore[operator]
            return result
        if isinstance(test, ast.Compare):
            return self._comparison(test)
        if isinstance(test, ast.Attribute) and test.attr in FLAG_ATTRS and self._rooted(test.value):
            self.read = True
            return FLAG_ATTRS[test.attr]
        if self._mentions(test):
            raise _Unreadable
        return None

    def _comparison(self, test: ast.Compare) -> Optional[FrozenSet[int]]:
        operands = [test.left] + list(test.comparators)
        if not any(self._is_status(o) for o in operands):
            if self._mentions(test):
                raise _Unreadable
            return None
        result = ALL_STATUSES
        for left, op, right in zip(operands, test.ops, operands[1:]):
            if isinstance(op, (ast.Is, ast.IsNot)) and any(isinstance(o, ast.Constant) and o.value is None
                                                           for o in (left, right)):
                result &= ALL_STATUSES if isinstance(op, ast.IsNot) else frozenset()  # a status is never None
                continue
            if self._is_status(left):
                values = self._values(right, op)
                result &= _apply(op, values, subject_left=True)
            elif self._is_status(right):
                values = self._values(left, op)
                result &= _apply(op, values, subject_left=False)
            else:
                raise _Unreadable
        self.read = True
        return result

    def _values(self, expr: ast.expr, op: ast.cmpop) -> FrozenSet[int]:
        if isinstance(op, (ast.In, ast.NotIn)):
            values = self._collection(expr)
        elif isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            bound = self._number(expr)
            values = frozenset({bound}) if bound is not None else None
        else:
            one = self._constant(expr)
            values = frozenset({one}) if one is not None else None
        if values is None:
            raise _Unreadable
        return values

    def _constant(self, expr: ast.expr) -> Optional[int]:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
            return expr.value if 100 <= expr.value < 600 else None
        if isinstance(expr, ast.Name) and isinstance(self.env.get(expr.id), int):
            value = self.env[expr.id]
            return value if 100 <= value < 600 else None
        name = _dotted(expr)
        return named_status(name, {name}) if name is not None else None

    def _collection(self, expr: ast.expr) -> Optional[FrozenSet[int]]:
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            values = [self._constant(e) for e in expr.elts]
            return None if any(v is None for v in values) else frozenset(values)  # type: ignore[arg-type]
        if isinstance(expr, ast.Name):
            held = self.env.get(expr.id)
            if isinstance(held, tuple) and held and all(isinstance(v, int) and 100 <= v < 600 for v in held):
                return frozenset(held)
            return None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and len(expr.args) in (1, 2) \
                and not expr.keywords:
            if expr.func.id in ("set", "frozenset", "tuple", "list") and len(expr.args) == 1:
                return self._collection(expr.args[0])
            if expr.func.id == "range":
                bounds = [self._number(a) for a in expr.args]
                if all(b is not None for b in bounds):
                    lo, hi = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
                    return frozenset(s for s in ALL_STATUSES if lo <= s < hi)  # type: ignore[operator]
        return None

    def _number(self, expr: ast.expr) -> Optional[int]:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
            return expr.value
        if isinstance(expr, ast.Name) and isinstance(self.env.get(expr.id), int):
            return self.env[expr.id]
        return self._constant(expr)

    # -- what holds the status

    def _is_status(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.names
        if isinstance(expr, ast.Attribute) and expr.attr in _STATUS_ATTRS | {"code"}:
            return self._rooted(expr.value)
        return False

    def _rooted(self, expr: ast.expr) -> bool:
        """``response`` or ``error.response``: the parameter, a few attributes deep."""
        depth = 0
        while isinstance(expr, ast.Attribute) and depth < 2:
            expr, depth = expr.value, depth + 1
        return isinstance(expr, ast.Name) and expr.id == self.param

    def _mentions(self, node: ast.AST) -> bool:
        """The node reads the status (``response.status_code``, a name holding it or computed from it)."""
        return any(
            isinstance(n, ast.Name) and (n.id in self.names or n.id in self.derived)
            or isinstance(n, ast.Attribute) and self._is_status(n)
            or isinstance(n, ast.Attribute) and n.attr in FLAG_ATTRS and self._rooted(n.value)
            for n in ast.walk(node)
        )


def _returns(body: List[ast.stmt]) -> bool:
    """Every path of a short branch returns (``log.debug(...); return True``)."""
    return bool(body) and isinstance(body[-1], ast.Return)


def _apply(op: ast.cmpop, values: FrozenSet[int], subject_left: bool) -> FrozenSet[int]:
    if isinstance(op, (ast.Eq, ast.In)):
        return values
    if isinstance(op, (ast.NotEq, ast.NotIn)):
        return ALL_STATUSES - values
    if len(values) != 1 or not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
        raise _Unreadable
    (value,) = tuple(values)
    if not subject_left:  # ``500 <= status``: mirror the operator
        op = {ast.Lt: ast.Gt(), ast.LtE: ast.GtE(), ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}[type(op)]
    return statuses_compared({ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">"}.get(type(op), ">="), value)


def statuses_compared(operator: str, value: float) -> FrozenSet[int]:
    """The statuses ``s`` for which ``s <operator> value`` holds (``<``, ``<=``, ``>``, ``>=``)."""
    tests = {"<": lambda s: s < value, "<=": lambda s: s <= value, ">": lambda s: s > value,
             ">=": lambda s: s >= value}
    return frozenset(s for s in ALL_STATUSES if tests[operator](s))

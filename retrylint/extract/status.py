"""HTTP status tests: which statuses make ``if resp.status_code …`` true."""

from __future__ import annotations

import re
from typing import FrozenSet, Optional, Tuple

import libcst as cst

from ..classifiers import ALL_STATUSES, FLAG_ATTRS, named_status, statuses_compared
from ..syntax import dotted_name, number, unwrap_await, walk
from .context import ModuleContext

STATUS_ATTRS = frozenset({"status_code", "status", "code", "status_int", "http_status", "getcode"})
#: What a status predicate is handed: a response (``response``, ``err.response``) or a status
#: (``r.status``, ``status_code``); the words ``candidates.FAILURE_WORDS`` needs are in it.
RESPONSE_OR_STATUS = re.compile(r"(^|\.)(\w*resp(onse)?|(http_)?status(_code)?)$")

#: Exceptions that carry an HTTP status, raised for 4xx as well as 5xx.
HTTP_STATUS_EXCEPTIONS = frozenset(
    {
        "requests.HTTPError",
        "requests.exceptions.HTTPError",
        "httpx.HTTPStatusError",
        "urllib.error.HTTPError",
        "urllib2.HTTPError",
        "aiohttp.ClientResponseError",
        "aiohttp.client_exceptions.ClientResponseError",
        "google.api_core.exceptions.ClientError",
        "botocore.exceptions.ClientError",
        "tornado.httpclient.HTTPClientError",
        "tornado.httpclient.HTTPError",
    }
)
#: Base classes that include the status errors once ``raise_for_status()`` runs in the try.
HTTP_ERROR_BASES = frozenset(
    {
        "requests.RequestException",
        "requests.exceptions.RequestException",
        "httpx.HTTPError",
        "aiohttp.ClientError",
        "aiohttp.client_exceptions.ClientError",
        "urllib.error.URLError",
    }
)


def status_set(test: cst.BaseExpression, ctx: ModuleContext) -> Optional[FrozenSet[int]]:
    """Statuses (100–599) for which ``test`` is true; None when it is not a pure status test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = status_set(test.expression, ctx)
        return ALL_STATUSES - inner if inner is not None else None
    if isinstance(test, cst.BooleanOperation):
        left, right = status_set(test.left, ctx), status_set(test.right, ctx)
        if left is None or right is None:
            return None
        return left & right if isinstance(test.operator, cst.And) else left | right
    if isinstance(test, cst.Attribute) and test.attr.value in FLAG_ATTRS and _response_like(test.value):
        return FLAG_ATTRS[test.attr.value]
    if isinstance(test, cst.Comparison):
        return _comparison(test, ctx)
    test = unwrap_await(test)
    if isinstance(test, cst.Call):
        return classified(test, ctx)
    return None


def status_range(test: cst.BaseExpression, ctx: ModuleContext) -> Optional[Tuple[FrozenSet[int], FrozenSet[int]]]:
    """The statuses for which ``test`` is surely true, and those for which it may be true
    (``attempt < limit and resp.status_code == 503`` may be true for 503 only); None when the
    test does not read the status, or reads it in a way we cannot."""
    exact = status_set(test, ctx)
    if exact is not None:
        return exact, exact
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = status_range(test.expression, ctx)
        return (ALL_STATUSES - inner[1], ALL_STATUSES - inner[0]) if inner is not None else None
    if isinstance(test, cst.BooleanOperation):
        sides = []
        for side in (test.left, test.right):
            found = status_range(side, ctx)
            if found is None and mentions_status(side, ctx):
                return None
            sides.append(found)
        if sides[0] is None and sides[1] is None:
            return None
        unknown = (frozenset(), ALL_STATUSES)
        budget = (ALL_STATUSES, ALL_STATUSES)  # ``remaining > 0``: true while the retry lasts
        read = [side for side, found in zip((test.left, test.right), sides) if found is not None]
        roots = {(dotted_name(n) or "").split(".")[0] for side in read for n in walk(side)
                 if isinstance(n, cst.Attribute)} - {"", "self", "cls"}
        ranges = []
        for side, found in zip((test.left, test.right), sides):
            if found is None and _present(side):
                found = (ALL_STATUSES, ALL_STATUSES)  # ``e.response and e.response.status_code == 404``
            if found is None:
                typed = _type_test(side, roots)
                if typed is None and any(isinstance(n, cst.Name) and n.value in roots for n in walk(side)):
                    # ``exc.status in (403, 429) and b"capacity" in exc.response.content``: the
                    # failure's text decides with the status, and we cannot read the text
                    return None
                found = budget if _budget_check(side) else typed or unknown
            ranges.append(found)
        (sure_l, may_l), (sure_r, may_r) = ranges
        if isinstance(test.operator, cst.And):
            return sure_l & sure_r, may_l & may_r
        return sure_l | sure_r, may_l | may_r
    return None


def _present(test: cst.BaseExpression) -> bool:
    """``e.response`` / ``resp is not None``: the object that carries the status exists, which it
    does whenever there is a status to test."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, cst.IsNot) and dotted_name(test.comparisons[0].comparator) == "None":
        test = test.left
    return isinstance(test, (cst.Attribute, cst.Name)) and bool(RESPONSE_OR_STATUS.search(dotted_name(test) or ""))


def _type_test(test: cst.BaseExpression, roots: set) -> Optional[Tuple[FrozenSet[int], FrozenSet[int]]]:
    """``not isinstance(result, BaseAPIResponse) or result.http_response.is_success``: a type test
    of the object whose status the other side reads. Whenever there is a status, that object is a
    response, so the type test is true (and its negation false) for every status."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    inner = test.expression if negated else test  # type: ignore[attr-defined]
    if not (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "isinstance"
            and inner.args and isinstance(inner.args[0].value, cst.Name) and inner.args[0].value.value in roots):
        return None
    return (frozenset(), frozenset()) if negated else (ALL_STATUSES, ALL_STATUSES)


_BUDGET_WORDS = re.compile(r"(attempt|retr|tries|tried|remaining|budget|left)", re.I)


def _budget_check(test: cst.BaseExpression) -> bool:
    """``attempt < max_attempts``, ``remaining_retries > 0``: a test of the retry's own budget,
    true on every pass but the last (the bound, judged elsewhere)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                                     cst.GreaterThanEqual)):
        return False
    names = [dotted_name(side) for side in (test.left, test.comparisons[0].comparator)]
    return any(n and _BUDGET_WORDS.search(n.rsplit(".", 1)[-1]) for n in names) and all(
        n is not None or number(side) is not None for n, side in zip(names, (test.left, test.comparisons[0].comparator))
    )


def classified(call: cst.Call, ctx: ModuleContext) -> Optional[FrozenSet[int]]:
    """``self._should_retry(response)``: the statuses a status predicate of the checked tree
    returns true for (:mod:`retrylint.classifiers`), when the call hands it a response or status."""
    callee = ctx.program_callee(call) or _default_predicate(call, ctx)
    if callee is None or any(arg.star for arg in call.args):
        return None
    found = ctx.program.classifier(*callee)
    if found is None:
        return None
    classifier = found[0]
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    argument = keywords.get(classifier.param)
    if argument is None and classifier.index < len(positional):
        argument = positional[classifier.index]
    if argument is None or not RESPONSE_OR_STATUS.search(dotted_name(unwrap_await(argument)) or ""):
        return None  # ``candidates.may_classify`` asks the same before libcst runs
    return frozenset(classifier.statuses)


def _default_predicate(call: cst.Call, ctx: ModuleContext) -> Optional[Tuple[str, None, None]]:
    """``backoff_if(response.status_code)`` with ``backoff_if=is_backoff_status_code`` a parameter
    that no caller in the package sets (nomic's ``request_backoff``): the default predicate."""
    if not isinstance(call.func, cst.Name):
        return None
    bindings = ctx.bindings(call.func)
    if len(bindings) != 1 or bindings[0].kind != "param" or not isinstance(bindings[0].value, cst.Name):
        return None
    param = bindings[0].node
    if not isinstance(param, cst.Param) or not ctx.parameter_left_out(param):
        return None
    return bindings[0].value.value, None, None


def _comparison(test: cst.Comparison, ctx: ModuleContext) -> Optional[FrozenSet[int]]:
    result = ALL_STATUSES
    left = test.left
    saw_status = False
    for target in test.comparisons:
        right = target.comparator
        op = target.operator
        if is_status_expr(left, ctx):
            values = _values(right, ctx, op)
            subject_left = True
        elif is_status_expr(right, ctx):
            values = _values(left, ctx, op)
            subject_left = False
        else:
            return None
        if values is None:
            return None
        saw_status = True
        result = result & _apply(op, values, subject_left)
        left = right
    return result if saw_status else None


def _apply(op: cst.BaseCompOp, values: FrozenSet[int], subject_left: bool) -> FrozenSet[int]:
    if isinstance(op, cst.In):
        return values
    if isinstance(op, cst.NotIn):
        return ALL_STATUSES - values
    (v,) = tuple(values) if len(values) == 1 else (None,)
    if v is None:
        return frozenset()
    if isinstance(op, cst.Equal) or isinstance(op, cst.Is):
        return frozenset({v})
    if isinstance(op, cst.NotEqual) or isinstance(op, cst.IsNot):
        return ALL_STATUSES - {v}
    if not subject_left:
        op = _mirror(op)
    symbol = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">="}.get(type(op))
    if symbol is not None:
        return statuses_compared(symbol, v)
    return frozenset()


def _mirror(op: cst.BaseCompOp) -> cst.BaseCompOp:
    if isinstance(op, cst.LessThan):
        return cst.GreaterThan()
    if isinstance(op, cst.LessThanEqual):
        return cst.GreaterThanEqual()
    if isinstance(op, cst.GreaterThan):
        return cst.LessThan()
    if isinstance(op, cst.GreaterThanEqual):
        return cst.LessThanEqual()
    return op


def _values(expr: cst.BaseExpression, ctx: ModuleContext, op: cst.BaseCompOp) -> Optional[FrozenSet[int]]:
    if isinstance(op, (cst.In, cst.NotIn)):
        return _collection(expr, ctx)
    value = status_constant(expr, ctx)
    return frozenset({value}) if value is not None else None


def status_constant(expr: cst.BaseExpression, ctx: ModuleContext) -> Optional[int]:
    """200, ``HTTPStatus.OK``, ``requests.codes.ok``, ``status.HTTP_429_TOO_MANY_REQUESTS``, a module constant."""
    value = number(expr)
    if value is not None:
        return int(value) if 100 <= value < 600 and value == int(value) else None
    name = dotted_name(expr)
    if name is None:
        return None
    found = named_status(name, {q for q in ctx.qualified_names(expr)} | {name})
    if found is not None:
        return found
    if isinstance(expr, cst.Name):
        constant = ctx.module_constant(expr.value, expr)
        if constant is not None and constant is not expr:
            return status_constant(constant, ctx)
    return None


def _collection(expr: cst.BaseExpression, ctx: ModuleContext, depth: int = 0) -> Optional[FrozenSet[int]]:
    expr = unwrap_await(expr)
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        out = set()
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                inner = _collection(element.value, ctx, depth + 1)
                if inner is None:
                    return None
                out |= inner
                continue
            value = status_constant(element.value, ctx)
            if value is None:
                return None
            out.add(value)
        return frozenset(out)
    if isinstance(expr, cst.Call) and depth < 5:
        names = ctx.call_name(expr)
        args = [a.value for a in expr.args if not a.star and a.keyword is None]
        if names & {"frozenset", "set", "tuple", "list"} and len(args) == 1:
            return _collection(args[0], ctx, depth + 1)
        if names & {"range"} and 1 <= len(args) <= 2:
            bounds = [number(a) for a in args]
            if all(b is not None for b in bounds):
                lo, hi = (0.0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
                return frozenset(s for s in ALL_STATUSES if lo <= s < hi)  # type: ignore[operator]
        return None
    if isinstance(expr, cst.Name) and depth < 5:
        bindings = [b for b in ctx.bindings(expr) if b.kind != "import"]
        if len(bindings) == 1 and bindings[0].value is not None:
            return _collection(bindings[0].value, ctx, depth + 1)
        if not bindings:
            constant = ctx.module_constant(expr.value, expr)
            if constant is not None:
                return _collection(constant, ctx, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.BitOr)) and depth < 5:
        # ``BASE_STATUSES + (409,)``, ``RETRYABLE | {502}``
        left, right = _collection(expr.left, ctx, depth + 1), _collection(expr.right, ctx, depth + 1)
        return left | right if left is not None and right is not None else None
    if isinstance(expr, cst.Attribute) and depth < 5:
        # ``self.RETRY_STATUSES``, ``Client.RETRY_CODES``, ``settings.RETRY_ON``: a value the
        # program view knows (a class attribute, a settings field, another module's constant)
        known = ctx.outside_value(expr)
        return _collection(known, ctx, depth + 1) if known is not None else None
    return None


def is_status_expr(expr: cst.BaseExpression, ctx: ModuleContext, depth: int = 0) -> bool:
    """``resp.status_code``, ``e.response.status``, ``resp.getcode()``, or a name assigned from one."""
    expr = unwrap_await(expr)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "getcode":
        return True
    if isinstance(expr, cst.Attribute) and expr.attr.value in STATUS_ATTRS:
        if expr.attr.value == "code":
            # ``e.code`` is an HTTP status on urllib's HTTPError; elsewhere it is often a string.
            return _response_like(expr.value) or _exception_like(expr.value)
        return True
    if isinstance(expr, cst.Name) and depth < 3:
        if re.fullmatch(r"(http_)?(status|status_code|code|resp_status|response_status|http_code)", expr.value):
            for binding in ctx.bindings(expr):
                if binding.value is not None and is_status_expr(binding.value, ctx, depth + 1):
                    return True
    return False


def _response_like(expr: cst.BaseExpression) -> bool:
    name = dotted_name(expr) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return bool(re.search(r"(resp|response|res|reply|result|r)$", last)) or last in ("r", "rv")


def _exception_like(expr: cst.BaseExpression) -> bool:
    name = (dotted_name(expr) or "").lower()
    return bool(re.fullmatch(r"(e|ex|exc|err|error|exception|http_?error|he)", name))


def mentions_status(node: cst.CSTNode, ctx: ModuleContext) -> bool:
    return any(
        isinstance(n, (cst.Attribute, cst.Name, cst.Call)) and is_status_expr(n, ctx)
        for n in walk(node)
    )

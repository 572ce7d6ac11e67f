"""Retries behind a switch that is off with the package's defaults.

``if self.wait_on_rate_limit: return self.request(...)`` (tweepy, ``wait_on_rate_limit=False``
in ``__init__``) or ``except Exception: if not restart_on_failure: raise`` (a parameter
defaulting to False that no caller here turns on): with the defaults the way back is never
taken, so the retry cannot happen. The labeled sets judge such code by its defaults; a user
who turns the switch on has chosen the retry. Unknown values are never guessed: a switch whose
value we cannot read is taken to be on.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ..program import DEFAULT
from ..syntax import dotted_name, literal_truth
from .context import ModuleContext


def truth_by_default(test: cst.BaseExpression, ctx: ModuleContext) -> Optional[bool]:
    """Whether ``test`` is true with the defaults: False/True when it reads one switch whose
    default we know, None otherwise."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth_by_default(test.expression, ctx)
        return None if inner is None else not inner
    if _testing_flag(test):
        return False
    if isinstance(test, cst.Attribute):
        found = ctx.outside_value(test)
        return literal_truth(found) if found is not None else None
    if isinstance(test, cst.Name):
        return _parameter_default(test, ctx)
    return None


#: A flag that says "running under the test suite" (mlflow's ``_MLFLOW_TESTING.get()``,
#: ``settings.TESTING``, ``is_testing()``): off wherever the package really runs.
_TESTING_FLAG = re.compile(r"(^|[._])(is_|in_|under_)?(testing|test_mode|tests?_running)$", re.I)


def _testing_flag(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Call) and not test.args:
        func = test.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get":
            test = func.value  # ``FLAG.get()`` reads the flag
        else:
            test = func  # ``is_testing()``
    name = dotted_name(test)
    return bool(name) and bool(_TESTING_FLAG.search(name))


def _parameter_default(name: cst.Name, ctx: ModuleContext) -> Optional[bool]:
    bindings = ctx.bindings(name)
    if len(bindings) != 1 or bindings[0].kind != "param":
        return None
    param = bindings[0].node
    if not isinstance(param, cst.Param):
        return None
    if param.default is None:
        return _given_by_every_caller(param, ctx)
    default = literal_truth(param.default)
    if default is None:
        return None
    passed = ctx.parameter_values(param)
    if passed is not None and any(v is not DEFAULT and _plain(v) != default for v in passed):
        return None  # a caller here turns it on (or passes something we cannot read)
    return default


def _given_by_every_caller(param: cst.Param, ctx: ModuleContext) -> Optional[bool]:
    """A required switch (pgqueuer's ``runit(..., restart_on_failure)``) that every call in the
    package gives the same known value: ``run(restart_on_failure=False)`` handing on its own
    default. None when a call elsewhere may pass something else, or values differ."""
    passed = ctx.parameter_values(param)
    if not passed or any(v is DEFAULT for v in passed):
        return None
    truths = {_plain(v) for v in passed}
    if len(truths) != 1 or None in truths or not ctx.parameter_unset_elsewhere(param):
        return None
    return truths.pop()


def _plain(value: object) -> Optional[bool]:
    if isinstance(value, (bool, int, float)) or value is None:
        return bool(value)
    return None


def taken_only_when(node: cst.CSTNode, stop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``node`` (a call, a ``continue``) sits in the body of an ``if`` between it and ``stop``
    whose test is false with the defaults."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is stop:
            return False
        if isinstance(ancestor, cst.If) and child is ancestor.body and truth_by_default(ancestor.test, ctx) is False:
            return True
        child = ancestor
    return False


def exits_first_by_default(body: cst.BaseSuite, ctx: ModuleContext) -> bool:
    """The handler starts with ``if not restart_on_failure: raise`` and the switch is off."""
    statements = list(getattr(body, "body", ()))
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine) and all(
                isinstance(s, cst.Expr) and isinstance(s.value, (cst.Call, cst.SimpleString)) for s in statement.body):
            continue  # logging first
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            return False
        raises = [s for line in statement.body.body if isinstance(line, cst.SimpleStatementLine)  # type: ignore[attr-defined]
                  for s in line.body if isinstance(s, (cst.Raise, cst.Return))]
        return bool(raises) and truth_by_default(statement.test, ctx) is True
    return False

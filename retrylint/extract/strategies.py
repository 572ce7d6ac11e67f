"""Delay strategies on their own: a function whose job is a backoff schedule.

``def next_delay(attempt): return base * 2 ** attempt`` or ``ExponentialBackoff.compute``
is judged as the schedule it is (RTY203 when every client computes the same exponential
delay; RTY204 when the rule can tell it outgrows the max-delay), at its definition, where a
reader fixes it. Its users inherit that verdict: a retry in *another* module that takes its
delay from the strategy is not reported again for it. A strategy used by a retry of its own
module is judged at that retry instead (the reader of the retry sees the helper's name in the
message and in ``explain``), so one schedule is reported once.

The strategy is the expression :mod:`retrylint.program` reads from a straight-line helper
(``returns``); the parameter named like a counter (``attempt``, ``retries``, ``failures``,
``n``) is the retry number.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import List

from ..model import Bound, DelayKind, GiveUp, Location, RetryPolicy, UNKNOWN
from ..narrowing import AllOf, Source, Trigger, Words
from .context import ModuleContext
from .delays import CounterInfo, DelayEnv, shape_of, to_delay

#: Parameter names that count retries (the strategy's variable).
COUNTER = re.compile(r"^(n|k|i|num|attempts?|attempt_?(no|num|number|count)|retr(y|ies)(_?(count|number|num|no))?"
                     r"|tries|try_?(count|num|number)|failures?|fail(ed)?_?(count|attempts)|consecutive_failures"
                     r"|iteration|count|retry_?attempt)$", re.I)
_NAME = re.compile(r"(delay|backoff|back_off|sleep|wait|interval|jitter|retry_time|pause)", re.I)
_GROWTH = (ast.Pow, ast.LShift)


def _confirm(statement: ast.stmt, source: Source) -> bool:
    """A function named like a delay whose body raises something to a power."""
    if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if not _NAME.search(statement.name) and statement.name not in ("compute", "next", "__next__", "get"):
        return False
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, _GROWTH) or
               isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
               and getattr(n.func, "attr", getattr(n.func, "id", "")) == "pow"
               for n in ast.walk(statement))


TRIGGER = Trigger(
    # Growth *and* a delay-like name (the strategy or its class is named like one, see
    # ``extract_strategies``): ``**`` alone is in every file that passes ``**kwargs``.
    text=AllOf(Words("**", "<<", "pow(", ignore_case=False),
               Words("delay", "backoff", "back_off", "sleep", "wait", "interval", "jitter", "retry_time", "pause",
                     ignore_case=True)),
    statements=(ast.FunctionDef, ast.AsyncFunctionDef),
    confirm=_confirm,
)


def extract_strategies(ctx: ModuleContext) -> List[RetryPolicy]:
    program = ctx.program
    own = program.own()
    if not own.helpers:
        return []
    used_here = program.called_names() | program.held_methods()
    out: List[RetryPolicy] = []
    for key, helper in own.helpers.items():
        if helper.returns is None:
            continue
        name = key.rsplit(".", 1)[-1]
        owner = key.split(".")[0] if "." in key else None
        if name in used_here:
            continue  # judged at the retry that uses it, in this module
        if not _NAME.search(name) and not (owner and _NAME.search(owner)):
            continue
        counters = [p for p in helper.params if COUNTER.match(p)]
        if len(counters) != 1:
            continue
        counter = counters[0]
        node = ctx.write_in_strategy(key, helper, counter)
        if node is None:
            continue
        start = 1 if re.search(r"fail|attempts?$|retries|tries", counter, re.I) and not re.search(r"^attempt$", counter) else 0
        env = DelayEnv(ctx, counters={counter: CounterInfo(init=start, step=1)})
        try:
            delay = to_delay(shape_of(node, env))
        except KeyError:
            continue  # the expression needed a position it does not have: not judged
        if delay.kind is not DelayKind.EXPONENTIAL:
            continue
        location = Location(helper.line, helper.column + 1, helper.end_line, helper.end_column + 1)
        where = f"`{name}()`" if owner is None else f"`{owner}.{name}()`"
        out.append(RetryPolicy(
            source="strategy",
            bound=Bound(attempts=UNKNOWN, text="decided by its callers"),
            delay=replace(delay, text=helper.returns),
            location=location,
            give_up=GiveUp.UNKNOWN,
            header_lines=(helper.line,),
            delay_location=location,
            extent=location,
            description=f"delay strategy {where}",
            operation=name,
            origins=(f"`{name}({counter})` returns `{helper.returns}`, {own.path}:{helper.line}",),
        ))
    return out



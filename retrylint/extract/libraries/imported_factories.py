"""Retry decorators built by a factory in another module: ``@retry_pattern(backoff.expo,
RequestException, max_tries=5, factor=5)`` where ``utils.retry_pattern`` returns
``backoff.on_exception(wait_gen, exception, jitter=None, **kwargs)``.

The factory cannot be judged where it is written (its schedule is a parameter); each use can, with
the values it passes. The factory's returned call (read by the program view,
:class:`~retrylint.program.PolicyFactory`) is written in at the use, its names read with its own
module's imports and its parameters as the use's arguments, and handed to the library's own
extractor: the same ``RetryPolicy``, reported at the use and naming the factory. A use whose
values change nothing the factory's own judgment sees is left to that judgment (one report).
Factories of the checked module itself are judged by
:func:`~retrylint.extract.libraries.built.factory_uses`.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ...model import RetryPolicy
from ...narrowing import Trigger, Words
from ...program import PolicyFactory
from ...syntax import call_args, walk
from ..context import ModuleContext
from . import backoff, tenacity
from .built import substituted_args
from .common import decorated

#: The extractor reads uses whose callee is named for retrying (the narrowing gate says the same).
_NAMED = re.compile(r"retry|retries|retried|retrying|backoff|tenac|resilien", re.IGNORECASE)

_WORDS = ("retry", "Retry", "RETRY", "retries", "Retries", "retried", "retrying", "Retrying", "backoff", "Backoff",
          "tenac", "Tenac", "resilien", "Resilien")
TRIGGER = Trigger(text=Words(*_WORDS), decorators=frozenset(_WORDS), partial=True)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    out: List[RetryPolicy] = []
    for node in walk(ctx.module, skip=()):
        if not isinstance(node, cst.Decorator) or not isinstance(node.decorator, cst.Call):
            continue
        use = node.decorator
        func = use.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        receiver = _receiver(func)
        if not name or not _NAMED.search(name) or receiver == "":
            continue
        found = ctx.program.policy_factory(name, receiver)
        if found is None:
            continue
        factory, facts = found
        policy = _judged_at_use(factory, facts, use, name, ctx)
        if policy is not None:
            out.append(policy)
    return out


def _receiver(func: cst.BaseExpression) -> Optional[str]:
    """None for ``retry_pattern``, ``"utils"`` for ``utils.retry_pattern``, "" for anything else."""
    if isinstance(func, cst.Name):
        return None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return func.value.value
    return ""


def _judged_at_use(factory: PolicyFactory, facts, use: cst.Call, name: str, ctx: ModuleContext) -> Optional[RetryPolicy]:
    bound = _bind(factory, use, facts, ctx)
    if bound is None:
        return None
    arguments, extras = bound
    call = ctx.written_at(factory.returns, use, facts, arguments)
    if not isinstance(call, cst.Call):
        return None
    policy_of = _library(call, ctx)
    if policy_of is None:
        return None
    # Judged here, not where the factory is written (that module leaves it to its uses).
    policy = policy_of(call, substituted_args(call, factory, arguments, extras), ctx)
    if policy is None:
        return None
    where = ctx.location(use)
    target = decorated(use, ctx)
    shown = f"built by `{name}(...)` in {facts.path}:{factory.line}"
    return policy.with_(
        origins=(f"`{ctx.code(use)}`: {shown} as `{factory.returns}`",),
        location=where,
        delay_location=where,
        header_lines=tuple(where.lines),
        extent=ctx.location(target) if target is not None else where,
        operation=target.name.value if target is not None else policy.operation,
        is_async=bool(target is not None and target.asynchronous is not None),
        anchor=None,  # no ``--fix``: the arguments to change are the factory's, in another file
        description=f"{policy.description} ({shown})",
    )


def _library(call: cst.Call, ctx: ModuleContext):
    names = ctx.qualified_names(call.func)
    if any(n.startswith("backoff.") for n in names):
        return backoff._policy
    if any(n.startswith("tenacity.") for n in names):
        return lambda c, a, x: tenacity._policy(c, a, x, defaults=True)
    return None


def _bind(factory: PolicyFactory, use: cst.Call, facts, ctx: ModuleContext
          ) -> Optional[Tuple[Dict[str, cst.BaseExpression], Dict[str, cst.BaseExpression]]]:
    """What the use passes for each parameter (the factory's defaults for the rest) and the
    keywords its ``**kwargs`` collects; None when that cannot be read."""
    if any(arg.star for arg in use.args):
        return None
    positional, keywords = call_args(use)
    if len(positional) > len(factory.params):
        return None
    arguments: Dict[str, cst.BaseExpression] = dict(zip(factory.params, positional))
    extras: Dict[str, cst.BaseExpression] = {}
    names = set(factory.params) | set(factory.keyword_only)
    for key, value in keywords.items():
        if key in names and key not in arguments:
            arguments[key] = value
        elif factory.kwargs:
            extras[key] = value
        else:
            return None
    defaults = dict(factory.defaults)
    for param in names - set(arguments):
        if param not in defaults:
            return None  # a required parameter left out: the use does not run
        default = ctx.written_at(defaults[param], use, facts)
        if default is None:
            return None
        arguments[param] = default
    return arguments, extras

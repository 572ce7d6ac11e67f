"""Fix recipes shared by the rules: small, library-aware edits of a policy's call."""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from ..fixes import UNSAFE, Edit, Fix, Fixer, first_call
from ..model import RetryPolicy

TENACITY_WAITS = {
    "wait_exponential": frozenset({"tenacity.wait_exponential", "tenacity.wait.wait_exponential"}),
    "wait_random_exponential": frozenset({"tenacity.wait_random_exponential", "tenacity.wait.wait_random_exponential"}),
    "wait_exponential_jitter": frozenset({"tenacity.wait_exponential_jitter", "tenacity.wait.wait_exponential_jitter"}),
}

#: The numbers unsafe fixes use when the code has none (documented in the rules).
DEFAULT_ATTEMPTS = 6
DEFAULT_CAP = 20


def call_of(policy: RetryPolicy) -> Optional[cst.Call]:
    return policy.anchor if isinstance(policy.anchor, cst.Call) else None


def built_edit(call: cst.Call, fixer: Fixer, keyword: str, value: str) -> Optional[Edit]:
    """``@retry(**RETRY_ARGS)`` with the dict built in this file: the key goes into the dict,
    where the policy is built (and reported), so every use of it is fixed."""
    if not any(arg.star == "**" for arg in call.args):
        return None
    from ..extract.libraries.built import expand

    _, built = expand(call, fixer.ctx)
    node = built.node if built is not None else None
    if isinstance(node, cst.Call) and fixer.ctx.call_name(node) & {"dict"}:
        return fixer.set_keyword(node, keyword, value)
    if isinstance(node, cst.Dict):
        if not node.elements:
            return fixer.replace(node, f'{{"{keyword}": {value}}}')
        for element in node.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                    and element.key.evaluated_value == keyword:
                return fixer.replace(element.value, value)
        # After the last element (before its comma, if any): it wins over every earlier ``**part``.
        last = fixer.ctx.location(node.elements[-1])
        return Edit(last.end_line, last.end_column, last.end_line, last.end_column, f', "{keyword}": {value}')
    return None


def tenacity_name(fixer: Fixer, call_or_name: cst.CSTNode, name: str) -> Optional[tuple]:
    """How to spell tenacity's ``name`` here: (text, extra edits), or None when we cannot."""
    alias = fixer.module_alias(call_or_name, "tenacity")
    if alias is not None:
        return f"{alias}.{name}", []
    func = call_or_name.func if isinstance(call_or_name, cst.Call) else call_or_name
    if isinstance(func, cst.Name):
        edit = fixer.import_name(func, "tenacity", name)
        if edit is False:
            return None
        return name, [edit] if isinstance(edit, Edit) else []
    return None


def add_tenacity_argument(policy: RetryPolicy, fixer: Fixer, keyword: str, helper: str, arguments: str,
                          message: str) -> Optional[Fix]:
    """``@retry(...)`` / ``@retry`` / ``Retrying(...)`` gets ``keyword=helper(arguments)``."""
    anchor = policy.anchor
    spelled = tenacity_name(fixer, anchor, helper) if anchor is not None else None
    if spelled is None:
        return None
    text, edits = spelled
    value = f"{text}({arguments})"
    if isinstance(anchor, cst.Call):
        edits = [built_edit(anchor, fixer, keyword, value) or fixer.set_keyword(anchor, keyword, value)] + edits
    elif isinstance(anchor, (cst.Name, cst.Attribute)):
        edits = [fixer.replace(anchor, f"{fixer.render(anchor)}({keyword}={value})")] + edits
    else:
        return None
    return Fix(UNSAFE, message, tuple(edits))


def set_argument(policy: RetryPolicy, fixer: Fixer, keyword: str, value: str, message: str,
                 safety: str = UNSAFE) -> Optional[Fix]:
    call = call_of(policy)
    if call is None:
        return None
    return Fix(safety, message, (built_edit(call, fixer, keyword, value) or fixer.set_keyword(call, keyword, value),))


def tenacity_wait_call(policy: RetryPolicy, fixer: Fixer, kinds: List[str]) -> Optional[cst.Call]:
    call = call_of(policy)
    if call is None:
        return None
    wait = fixer.keyword(call, "wait")
    if wait is None:
        return None
    names = frozenset().union(*(TENACITY_WAITS[k] for k in kinds))
    return first_call(wait.value, fixer.ctx, names)


def rename(fixer: Fixer, call: cst.Call, new_name: str, module: str, message: str) -> Optional[Fix]:
    """Call another function of the library with the same arguments. Used for the jitter swaps
    (tenacity ``wait_exponential`` → ``wait_random_exponential``, redis ``ExponentialBackoff`` →
    ``FullJitterBackoff``): they always change the average delay (a full-jitter draw averages
    half the exponential delay), and on tenacity < 9 ``wait_random_exponential`` ignores
    ``min``, so no version and no arguments make them equivalent: unsafe."""
    edits = fixer.rename_callee(call, new_name, module)
    if not edits:
        return None
    return Fix(UNSAFE, message, tuple(edits))

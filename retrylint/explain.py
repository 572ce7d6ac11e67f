"""``retrylint explain PATH[:LINE]``: each retry site's policy in words and numbers."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, TextIO, Tuple

from .describe import bound_phrase, delay_phrase, number
from .model import UNKNOWN, CatchKind, DelayKind, RetryPolicy, known
from .schedule import INF, DelayRange, format_seconds, schedule

_TARGET = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::(?P<column>\d+))?:?$")


def parse_target(target: str) -> Tuple[str, Optional[int]]:
    """``app.py:42`` → (``app.py``, 42); ``app.py:42:5`` and ``app.py:42:5:`` (a location as
    ``check`` prints it) too. A path that exists as written wins (``C:`` drives, odd names)."""
    if Path(target).exists():
        return target, None
    match = _TARGET.match(target)
    if match:
        return match.group("path"), int(match.group("line"))
    return target, None


def select_sites(policies: List[RetryPolicy], line: Optional[int]) -> List[RetryPolicy]:
    if line is None:
        return policies
    # The site's own lines, or its header: a decorator line, and the use of a policy whose report
    # moved to where its arguments are built (``@stamina.retry(**POLICY)``).
    containing = [
        p for p in policies if p.extent is not None and p.extent.line <= line <= p.extent.end_line
    ] or [p for p in policies if p.location.line == line or line in p.header_lines]
    if not containing:
        return []
    # The innermost site: the one that starts last.
    innermost = max(containing, key=lambda p: (p.extent or p.location).line)
    return [innermost]


def _range_text(r: DelayRange) -> str:
    if not known(r.low) or not known(r.high):
        return "?"
    low, high = float(r.low), float(r.high)  # type: ignore[arg-type]
    if high == INF:
        return "∞"
    if abs(low - high) < 1e-12:
        return number(low)
    return f"{number(round(low, 3))}–{number(round(high, 3))}"


def schedule_line(policy: RetryPolicy) -> str:
    if policy.delay.kind is DelayKind.NONE and not policy.bound.unbounded:
        return "no waiting: every retry starts at once"
    laid = schedule(policy)
    if not laid.ranges:
        return "no retries"
    texts = [_range_text(r) for r in laid.ranges]
    if len(texts) > 12:
        # A long schedule (a deadline with short delays): its start, its end and its length.
        texts = texts[:8] + [f"… ({len(laid.ranges)} retries) …"] + texts[-2:]
    parts = ", ".join(texts)
    if not laid.complete:
        return f"{parts}, … s (never stops)" if policy.bound.unbounded else f"{parts}, … s"
    total = format_seconds(laid.total_worst)
    return f"{parts} s = {total}" if known(laid.total_worst) else f"{parts} s"


def describe_errors(policy: RetryPolicy) -> str:
    parts = []
    for clause in policy.errors:
        if clause.kind is CatchKind.CATCH_ALL and not clause.names:
            parts.append("everything (bare except)")
        elif clause.kind is CatchKind.PREDICATE:
            parts.append("a predicate (unknown)")
        else:
            parts.append(", ".join(dict.fromkeys(clause.names)))  # a tuple of aliases may name one class twice
    if policy.statuses is not None:
        parts.append(f"HTTP statuses from `{policy.statuses.text}`")
    return "; ".join(parts) or "unknown"


def to_dict(policy: RetryPolicy, path: str) -> Dict[str, Any]:
    laid = schedule(policy)

    def num(value: Any) -> Any:
        if value is UNKNOWN:
            return "unknown"
        if isinstance(value, float) and value == INF:
            return "infinity"
        return value

    return {
        "filename": path,
        "location": {"row": policy.location.line, "column": policy.location.column},
        "source": policy.source,
        "description": policy.description,
        "operation": policy.operation,
        "bound": {"attempts": num(policy.bound.attempts), "deadline": num(policy.bound.deadline), "text": policy.bound.text},
        "delay": {
            "kind": policy.delay.kind.value,
            "base": num(policy.delay.base),
            "factor": num(policy.delay.factor),
            "step": num(policy.delay.step),
            "cap": num(policy.delay.cap),
            "steps": list(policy.delay.steps) if policy.delay.steps else None,
            "jitter": {"kind": policy.delay.jitter.kind.value, "amount": num(policy.delay.jitter.amount)},
            "text": policy.delay.text,
            "honours_retry_after": policy.delay.honours_retry_after,
        },
        "retried_errors": [
            {"kind": c.kind.value, "names": list(c.names), "permanent_exit_before": c.permanent_exit_before}
            for c in policy.errors
        ],
        "retried_statuses": list(policy.statuses.statuses) if policy.statuses else None,
        "give_up": policy.give_up.value,
        "schedule": [
            {"retry": i + 1, "min": num(r.low), "max": num(r.high), "expected": num(r.expected)}
            for i, r in enumerate(laid.ranges)
        ],
        "schedule_complete": laid.complete,
        "largest_delay": num(laid.largest),
        "total_wait_worst": num(laid.total_worst),
        "total_wait_expected": num(laid.total_expected),
        **_around(policy, num),
        # Only where a value was read from elsewhere (``explain`` text: "values from").
        **({"origins": list(policy.origins)} if policy.origins else {}),
    }


def _around(policy: RetryPolicy, num: Any) -> Dict[str, Any]:
    """RTY501's retry layers and RTY504's collapse point, for JSON."""
    from .rules.rty501_retry_amplification import amplification
    from .rules.rty504_jitter_collapses_at_cap import collapse

    found = amplification(policy)
    collapsed = collapse(policy)
    return {
        "inner_retries": [
            {"call": layer.call, "row": layer.location.line, "source": layer.policy.source,
             "attempts": num(layer.policy.bound.attempts), "policy_row": layer.policy.location.line, "via": layer.via}
            for layer in policy.inner
        ],
        "attempts_per_call": found[1] * found[2] if found else None,
        "jitter_collapses_from_retry": collapsed.retry if collapsed else None,
    }


def around_lines(policy: RetryPolicy) -> List[str]:
    """RTY501's retry layers with the multiplied attempts, RTY504's collapse, for text."""
    from .rules.rty501_retry_amplification import amplified_text
    from .rules.rty504_jitter_collapses_at_cap import collapse

    lines = []
    for layer in policy.inner:
        lines.append(f"  inner retry: `{layer.call}` (line {layer.location.line}) retries on its own: "
                     f"{layer.policy.description} ({layer.where or f'line {layer.policy.location.line}'}), "
                     f"{bound_phrase(layer.policy.bound)}")
    amplified = amplified_text(policy)
    if amplified:
        lines.append(f"  amplified:   {amplified}")
    collapsed = collapse(policy)
    if collapsed is not None and collapsed.partial:
        # min(cap, random() * d): drawn before the clamp, a growing share of the waits is the cap.
        later = f", {_share(collapsed.last_share)} by retry {collapsed.last}" if collapsed.last and collapsed.last > collapsed.retry else ""
        lines.append(f"  jitter:      drawn before the {format_seconds(collapsed.cap)} cap: from retry {collapsed.retry} on most "
                     f"waits are exactly {format_seconds(collapsed.cap)} ({_share(collapsed.share)} at retry {collapsed.retry}{later})")
    elif collapsed is not None:
        lines.append(f"  jitter:      clamped away at the {format_seconds(collapsed.cap)} cap: from retry {collapsed.retry} on "
                     f"every wait is exactly {format_seconds(collapsed.cap)}")
    return lines


def _share(share: float) -> str:
    return f"{min(round(share * 100), 99)} %"


def to_text(policy: RetryPolicy, path: str) -> str:
    laid = schedule(policy)
    lines = [f"{path}:{policy.location.line}:{policy.location.column}: {policy.description}"]
    if policy.operation:
        lines.append(f"  operation:   {policy.operation}")
    bound = bound_phrase(policy.bound)
    lines.append(f"  bound:       {bound}" + (f" ({policy.bound.text})" if policy.bound.text else ""))
    lines.append(f"  delay:       {delay_phrase(policy.delay)[len('with '):]}")
    if policy.delay.honours_retry_after:
        lines.append("               (honours Retry-After)")
    lines.append(f"  retries on:  {describe_errors(policy)}")
    lines.append(f"  gives up:    {policy.give_up.value}")
    lines.append(f"  schedule:    {schedule_line(policy)}")
    lines.append(f"  largest delay: {format_seconds(laid.largest) if laid.complete or policy.bound.unbounded else format_seconds(laid.largest) + ' so far'}")
    worst = format_seconds(laid.total_worst)
    expected = format_seconds(laid.total_expected)
    lines.append(f"  total wait:  worst {worst}, expected {expected}")
    for index, origin in enumerate(policy.origins):
        # A value the site reads from elsewhere: where a reader can check it.
        lines.append(f"  {'values from:' if index == 0 else '':<13}{origin}")
    lines.extend(around_lines(policy))
    return "\n".join(lines) + "\n"


def cmd_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    from .cli import EXIT_CLEAN, EXIT_ERROR, UsageError, budget_of, load
    from .config import resolve
    from .discovery import PathNotFound, discover
    from .runner import run_files

    path, line = parse_target(args.target)
    config = load(args, [path])
    settings = resolve(config)
    try:
        candidates = discover([path], settings, config.root)
    except PathNotFound:
        raise UsageError(f"path does not exist: {path}") from None
    # Within the budget per file, as ``check`` (a file over it: the notice, never a hang).
    result = run_files(candidates, settings, config.root, want_policies=True, jobs=os.cpu_count() or 1,
                       budget=budget_of(args))
    sites: List[Tuple[str, RetryPolicy]] = []
    for report in result.reports:
        for policy in select_sites(report.policies, line):
            sites.append((report.path, policy))
    unparsed = [f for f in result.findings if f.code == "RTY001"]
    for finding in unparsed:
        err.write(f"retrylint: error: {finding.path}:{finding.location.line}: {finding.message}\n")
    # A file that was asked about but not analysed is an error here, not a warning as in
    # ``check``: "no site" would be an answer the run cannot give.
    for notice_path, notice in result.notices:
        err.write(f"retrylint: error: {notice_path}: {notice}\n")
    for error_path, error in result.errors:
        err.write(f"retrylint: error: {error_path}: {error}\n")
    if args.output_format == "json":
        out.write(json.dumps([to_dict(p, name) for name, p in sites], indent=2, ensure_ascii=False) + "\n")
    else:
        if not sites and not args.quiet and not (result.notices or unparsed or result.errors):
            where = f"{path}:{line}" if line else path
            out.write(f"no retry site found in {where}\n")
        out.write("\n".join(to_text(p, name) for name, p in sites))
    if result.errors or result.notices or unparsed:
        return EXIT_ERROR
    return EXIT_CLEAN

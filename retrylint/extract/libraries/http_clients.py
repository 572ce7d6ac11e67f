"""HTTP client retries: urllib3 ``Retry(...)``, requests ``HTTPAdapter(max_retries=...)``,
httpx ``HTTPTransport(retries=...)``.

urllib3 2.x: ``Retry(total=10, ..., backoff_factor=0, backoff_max=120, backoff_jitter=0,
status_forcelist=None, respect_retry_after_header=True)``; the first retry waits 0, then
``backoff_factor * 2 ** (n - 1)``, capped at ``backoff_max``. ``Retry.get_backoff_time``
(urllib3 2.8.0) adds ``random() * backoff_jitter`` *before* the clamp,
``min(backoff_max, backoff_factor * 2 ** (n - 1) + random() * backoff_jitter)``: once the
exponential part alone reaches ``backoff_max``, every client waits exactly ``backoff_max``
(RTY504; urllib3 1.26 has no ``backoff_jitter``). requests turns an integer
``max_retries`` into ``Retry(n)`` (no backoff). httpx retries connection failures through
httpcore: 0 s, then 0.5 s, 1 s, 2 s … (no jitter, no cap).
"""

from __future__ import annotations

import re
from typing import List, Optional

import libcst as cst

from ...model import (
    UNBOUNDED,
    UNKNOWN,
    Bound,
    Delay,
    DelayKind,
    Jitter,
    JitterKind,
    RetriedStatuses,
    RetryPolicy,
    known,
)
from ...narrowing import Trigger
from ..context import ModuleContext
from ..status import _collection
from .built import mapping_of, policies_of
from .common import Args, build, calls_named, is_false, last, resolve, scaled, shipped_default, text_trigger, value

RETRY = frozenset(
    {
        "urllib3.Retry",
        "urllib3.util.Retry",
        "urllib3.util.retry.Retry",
        "requests.adapters.Retry",
        "requests.packages.urllib3.util.retry.Retry",
        "requests.packages.urllib3.Retry",
        "botocore.vendored.requests.packages.urllib3.util.retry.Retry",
    }
)
ADAPTERS = frozenset({"requests.adapters.HTTPAdapter", "requests.HTTPAdapter"})
TRANSPORTS = frozenset({"httpx.HTTPTransport", "httpx.AsyncHTTPTransport"})
_WORDS = frozenset({"Retry", "HTTPAdapter", "HTTPTransport", "AsyncHTTPTransport"})
_COUNTERS = ("connect", "read", "redirect", "status", "other")

#: urllib3/httpcore defaults, as assumed here (tests compare them with the installed packages).
DEFAULTS = {
    "Retry.total": 10.0,
    "Retry.backoff_factor": 0.0,
    "Retry.backoff_max": 120.0,
    "Retry.backoff_jitter": 0.0,
    "httpcore.backoff_factor": 0.5,
}

TRIGGER = Trigger(text=text_trigger("urllib3", "HTTPAdapter", "HTTPTransport", "Retry"), calls=_WORDS)
#: Keeps the methods that only read a response with a Retry object (``_only_parses_headers``).
READERS = Trigger(text=text_trigger("parse_retry_after", "get_retry_after"),
                  calls=frozenset({"parse_retry_after", "get_retry_after"}), context=True)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    policies: List[RetryPolicy] = policies_of(calls_named(ctx, RETRY), ctx, _urllib3)
    for call in calls_named(ctx, ADAPTERS):
        policy = _adapter(call, ctx)
        if policy is not None:
            policies.append(policy)
    for call in calls_named(ctx, TRANSPORTS):
        policy = _transport(call, ctx)
        if policy is not None:
            policies.append(policy)
    return policies


def _urllib3(call: cst.Call, args: Args, ctx: ModuleContext) -> Optional[RetryPolicy]:
    if not call.args and _only_parses_headers(call, ctx):
        return None  # sentry's ``self._retry = urllib3.util.Retry()`` reads Retry-After with it
    total_expr = args.get("total", 0)
    if total_expr is not None and is_false(resolve(total_expr, ctx)):
        return None  # Retry(0) / Retry(False): retries switched off
    total = value(total_expr, ctx, DEFAULTS["Retry.total"])
    counters = [value(args.get(name), ctx, None) for name in _COUNTERS]
    if total is None:
        limits = [c for c in counters if c is not None]
        if not limits:
            bound = UNBOUNDED if not args.opaque else Bound(attempts=UNKNOWN)
        else:
            bound = Bound(attempts=UNKNOWN)  # each kind of failure has its own limit
    else:
        bound = Bound(attempts=float(total) + 1 if known(total) else UNKNOWN)  # type: ignore[arg-type]
    if args.opaque and not args.given("total") and not _limits_given(args) and _may_pass(call, "total", ctx):
        bound = Bound(attempts=UNKNOWN)  # ``Retry(**config)``: the configuration sets the bound
    factor = value(args.get("backoff_factor"), ctx, DEFAULTS["Retry.backoff_factor"])
    if args.opaque and not args.given("backoff_factor") and _may_pass(call, "backoff_factor", ctx):
        factor = UNKNOWN  # ``Retry(**idp_request_retry_kwargs)``: values only the user sets
    cap = value(args.get("backoff_max"), ctx, DEFAULTS["Retry.backoff_max"])
    jitter_amount = value(args.get("backoff_jitter"), ctx, DEFAULTS["Retry.backoff_jitter"])
    text = ctx.code(call)
    if known(factor) and float(factor) == 0:  # type: ignore[arg-type]
        delay = Delay(DelayKind.NONE, text=text)
    elif not known(factor):
        # A factor passed in may be 0 (immediate retries) or anything else: no shape to judge.
        given = args.get("backoff_factor")
        delay = Delay(DelayKind.UNKNOWN, text=f"backoff_factor={ctx.code(given)}" if given is not None else text)
    else:
        if args.opaque and not args.given("backoff_jitter") and _may_pass(call, "backoff_jitter", ctx):
            jitter = Jitter(JitterKind.UNKNOWN)  # `**kwargs` may carry backoff_jitter
        elif known(jitter_amount) and float(jitter_amount) == 0:  # type: ignore[arg-type]
            jitter = Jitter()
        else:
            jitter = Jitter(JitterKind.ADDITIVE, jitter_amount)
        delay = Delay(DelayKind.EXPONENTIAL, base=scaled(factor, 2.0), factor=2.0, cap=cap, jitter=jitter,
                      text=f"backoff_factor={ctx.code(args.get('backoff_factor'))}" if args.given("backoff_factor") else text,
                      first_immediate=True,
                      # get_backoff_time: min(backoff_max, backoff_factor * 2 ** (n - 1) + random() * backoff_jitter)
                      jitter_then_cap=jitter.kind is JitterKind.ADDITIVE)
    statuses = None
    forcelist = args.get("status_forcelist")
    if forcelist is not None and not _decides_per_response(call, ctx):
        codes = _collection(forcelist, ctx)
        if codes is not None:
            statuses = RetriedStatuses(tuple(sorted(codes)), ctx.location(forcelist), f"status_forcelist={ctx.code(forcelist)}")
    return build("urllib3", call, ctx, bound, delay, (), description="urllib3 `Retry(...)`", statuses=statuses)


def _decides_per_response(call: cst.Call, ctx: ModuleContext) -> bool:
    """``_RetryRateLimit(status_forcelist=[400])`` where the module's subclass overrides
    ``increment``/``is_retry`` and raises for every 400 but "Rate limit exceeded" (dns-lexicon's
    DNSMadeEasy provider): the subclass decides which responses are retried, not the list."""
    name = call.func.value if isinstance(call.func, cst.Name) else None
    # the summaries, read from the whole file: narrowing blanks the class where libcst reads
    return name is not None and any(ctx.summaries.refuses(f"{name}.{method}") for method in ("increment", "is_retry"))


def _limits_given(args: Args) -> bool:
    return any(args.given(name) for name in _COUNTERS)


#: Methods of a Retry object that only read a response (no request is re-sent through them).
_READERS = re.compile(r"\.(parse_retry_after|get_retry_after|get_backoff_time|is_retry|is_exhausted)\(")


def _only_parses_headers(call: cst.Call, ctx: ModuleContext) -> bool:
    """A default ``Retry()`` kept in a name whose every use reads a response with it."""
    parent = ctx.parent(call)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return False
    target = ctx.code(parent.targets[0].target)
    source = ctx.module.code
    uses = [m.end() for m in re.finditer(re.escape(target) + r"\b", source)]
    others = [end for end in uses if not source[end:].lstrip().startswith("=")
              or source[end:].lstrip().startswith("==")]
    return bool(others) and all(_READERS.match(source, end) for end in others)


def _may_pass(call: cst.Call, keyword: str, ctx: ModuleContext) -> bool:
    """Whether ``*args``/``**kwargs`` in the call may carry ``keyword``: not when every
    ``**`` is a dict literal (``**_ANY_METHOD``) without that key."""
    for arg in call.args:
        if arg.star == "*":
            return True
        if arg.star == "**":
            read = mapping_of(arg.value, ctx, 0)
            if read is not None:
                if read.open or keyword in read.keys:
                    return True
                continue
            values = _dict_values(arg.value, ctx)
            if len(values) < 2:
                return True  # one value that cannot be read: changed after it was built, or passed in
            for mapping in values:
                if not isinstance(mapping, cst.Dict):
                    return True
                for element in mapping.elements:
                    if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                        return True
                    if element.key.evaluated_value == keyword:
                        return True
    return False


def _dict_values(expr: cst.BaseExpression, ctx: ModuleContext) -> List[Optional[cst.BaseExpression]]:
    """What a ``**name`` can be: its one value, or each value of a name set in several
    branches (``try: X = {...} except ImportError: X = {...}``)."""
    resolved = resolve(expr, ctx)
    if isinstance(resolved, cst.Name):
        bindings = ctx.bindings(resolved)
        if not bindings:
            constant = ctx.module_constant(resolved.value, resolved)
            return [constant]
        return [b.value if b.kind == "assign" else None for b in bindings]
    return [resolved]


def _adapter(call: cst.Call, ctx: ModuleContext) -> Optional[RetryPolicy]:
    args = Args.of(call)
    retries = args.get("max_retries", 2)  # (pool_connections, pool_maxsize, max_retries, pool_block)
    if retries is None:
        return None  # the default: Retry(0, read=False), no retries
    resolved = resolve(retries, ctx)
    if isinstance(resolved, cst.Call):
        return None  # a Retry(...) object: judged where it is built
    count = value(retries, ctx, UNKNOWN)
    if not known(count):
        shipped = shipped_default(retries, ctx)  # ``def __init__(self, max_retries=2)``, passed by nobody
        count = value(shipped, ctx, UNKNOWN) if shipped is not None else UNKNOWN
    if not known(count) or float(count) <= 0:  # type: ignore[arg-type]
        return None
    bound = Bound(attempts=float(count) + 1)  # type: ignore[arg-type]
    delay = Delay(DelayKind.NONE, text=f"max_retries={ctx.code(retries)}")
    return build("requests", call, ctx, bound, delay, (), description="requests `HTTPAdapter(max_retries=...)`")


def _transport(call: cst.Call, ctx: ModuleContext) -> Optional[RetryPolicy]:
    args = Args.of(call)
    retries_expr = args.get("retries")
    if retries_expr is None:
        return None
    count = value(retries_expr, ctx, UNKNOWN)
    if known(count) and float(count) <= 0:  # type: ignore[arg-type]
        return None
    bound = Bound(attempts=float(count) + 1 if known(count) else UNKNOWN)  # type: ignore[arg-type]
    if not known(count):
        # httpcore waits 0 s before the first retry and 0.5 s before the second: whether a
        # passed-in count ever reaches a growing delay is unknown.
        delay = Delay(DelayKind.UNKNOWN, text=f"retries={ctx.code(retries_expr)} (httpcore backoff 0, 0.5, 1, 2 … s)")
        return build("httpx", call, ctx, bound, delay, (), description=f"httpx `{last(call.func)}(retries=...)`")
    delay = Delay(DelayKind.EXPONENTIAL, base=DEFAULTS["httpcore.backoff_factor"], factor=2.0, cap=None, first_immediate=True,
                  text=f"retries={ctx.code(retries_expr)} (httpcore backoff 0, 0.5, 1, 2 … s)")
    return build("httpx", call, ctx, bound, delay, (), description=f"httpx `{last(call.func)}(retries=...)`")

"""Ambiguous failures and idempotency: did a retry apply the same business operation twice?

The fake downstream can apply a request and then fail the answer
(:func:`~pytest_retry_check.downstream.after_commit`: a 502 after the upstream applied it, a
connection reset after the write, a timeout after the commit). The client cannot tell that from
a failure before the commit, so it retries, and a non-idempotent operation (a payment, an order,
an insert) happens twice. Every call records whether it took effect (``CallRecord.applied``);
:func:`assert_idempotent` groups the applied calls by business key and fails when one key was
applied more than once.

The business key of a call (``key=``, on the downstream or the assertion):

- ``None`` (default): the request itself -- method, path and body over HTTP; the arguments of a
  callable (less ``timeout``, ``headers`` and ``idempotency_key``). A retry repeats the request,
  so two applied copies of it are the same operation done twice;
- a name: a keyword argument of the callable, a field of the JSON body, or a query parameter
  (``key="order_id"``);
- a function of the :class:`~pytest_retry_check.downstream.CallRecord` (``call.json``,
  ``call.header(name)``, ``call.kwargs``, ``call.path``).

A request that carries the idempotency key of a request already applied (header
``Idempotency-Key`` by default, ``idempotency_key=`` for a callable) is not applied again: the
fake honours it, as Stripe-style APIs do. ``fake_downstream(idempotency=None)`` plays a server
that ignores the header.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence
from urllib.parse import parse_qs, urlsplit

from .assertions import _fail, _require_calls, trace_of
from .downstream import CallRecord
from .timeline import format_seconds
from .trace import Attempt, Trace

__all__ = ["assert_idempotent", "effects_by_key", "key_of", "request_key"]

_NOT_THE_REQUEST = frozenset({"timeout", "headers", "idempotency_key"})
_MISSING = object()


def request_key(call: CallRecord) -> Any:
    """The default business key: the request itself (what a retry repeats)."""
    if call.method:
        return (call.method, call.path, call.body)
    kwargs = tuple(sorted((k, repr(v)) for k, v in call.kwargs.items() if k not in _NOT_THE_REQUEST))
    return (repr(call.args), kwargs)


def _field(call: CallRecord, name: str) -> Any:
    if name in call.kwargs:
        return call.kwargs[name]
    body = call.json
    if isinstance(body, dict) and name in body:
        return body[name]
    query = parse_qs(urlsplit(call.path).query)
    if name in query:
        values = query[name]
        return values[0] if len(values) == 1 else tuple(values)
    return _MISSING


def key_of(call: CallRecord, key: Any) -> Any:
    """The business key of ``call`` (see the module's documentation)."""
    __tracebackhide__ = True
    if key is None:
        return request_key(call)
    if isinstance(key, str):
        value = _field(call, key)
        if value is _MISSING:
            raise ValueError(
                f"key={key!r}: call #{call.number} ({call.request}) has no keyword argument, JSON body field or query "
                f"parameter {key!r}; pass key=lambda call: ... to derive the business key another way"
            )
        return value if _hashable(value) else repr(value)
    if callable(key):
        value = key(call)
        return value if _hashable(value) else repr(value)
    raise TypeError(f"key must be None (the request), a field name or a function of the CallRecord, not {key!r}")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def effects_by_key(calls: Sequence[CallRecord], key: Any = None) -> Dict[Any, List[CallRecord]]:
    """The applied calls, grouped by business key, in call order."""
    __tracebackhide__ = True
    grouped: Dict[Any, List[CallRecord]] = {}
    for call in calls:
        if call.applied:
            grouped.setdefault(key_of(call, key), []).append(call)
    return grouped


def _show_key(value: Any, key: Any = None) -> str:
    if isinstance(key, str):
        return f"{key}={value!r}"
    if key is not None:
        return repr(value)
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[2], bytes):  # a request key over HTTP
        method, path, body = value
        text = f"{method} {path}"
        if body:
            shown = body[:60].decode("utf-8", "replace")
            text += f" {shown}{'...' if len(body) > 60 else ''}"
        return text
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and value[0].startswith("("):
        args, kwargs = value
        inner = args[1:-1].rstrip(",")
        parts = [inner] if inner else []
        parts += [f"{k}={v}" for k, v in kwargs]
        return f"call({', '.join(parts)})"
    return repr(value)


def _describe_attempt(attempt: Attempt, origin: float) -> str:
    return f"#{attempt.number} (+{format_seconds(attempt.at - origin)}, {attempt.outcome.label})"


def assert_idempotent(run: Any, *, key: Any = None) -> Trace:
    """No business operation was applied twice: a retry after an ambiguous failure (the request
    applied, then the answer failed) must not apply it again. ``key``: how a call names its
    operation (None: the downstream's ``key``, else the request itself; a field name; a function
    of the CallRecord). Fails with the attempts that applied the same key, their virtual times
    and answers, and what the idempotency keys were. Returns the trace."""
    __tracebackhide__ = True
    trace = trace_of(run)
    _require_calls(trace, "idempotent")
    calls = [a.call for a in trace.attempts]
    if any(c is None for c in calls):
        raise ValueError("this trace has no call records (built by hand?): pass a capture_trace, a FakeDownstream or downstream.trace()")
    if key is None and isinstance(run, _downstream_type()):
        key = run.key
    elif key is None:
        owner = getattr(run, "downstream", None)
        key = getattr(owner, "key", None)
    by_number = {a.call.number: a for a in trace.attempts if a.call is not None}
    groups = effects_by_key([c for c in calls if c is not None], key)
    twice = {k: v for k, v in groups.items() if len(v) > 1}
    if twice:
        problems = []
        for value, applied in twice.items():
            attempts = [by_number[c.number] for c in applied]
            origin = trace.attempts[0].at
            shown = ", ".join(_describe_attempt(a, origin) for a in attempts[:-1]) + f" and {_describe_attempt(attempts[-1], origin)}"
            problems.append(f"{_show_key(value, key)} was applied {len(applied)} times, by attempts {shown}")
        first = next(iter(twice.values()))
        problem = "a retry applied the same operation again: " + "; ".join(problems) + "\n" + _advice(first)
        raise _fail("idempotent", problem, [trace])
    ambiguous = [a for a in trace.attempts if a.outcome.after_commit]
    if not ambiguous:
        raise _fail(
            "idempotent",
            "no answer failed after the request was applied, so a retry could not duplicate anything: script an ambiguous "
            "failure, e.g. outcomes=[error_after_commit(502)], reset_after_commit() or timeout_after_commit()",
            [trace],
        )
    return trace


def _advice(applied: List[CallRecord]) -> str:
    keys = [c.idempotency_key for c in applied]
    if all(k is None for k in keys):
        return (
            "no attempt carried an idempotency key: send one (header Idempotency-Key), made once per operation outside "
            "the retry, or make the write conditional, or do not retry what may have been applied"
        )
    if len(set(keys)) > 1:
        shown = ", ".join(repr(k) for k in keys[:4])
        return (
            f"the attempts carried different idempotency keys ({shown}): a key made per attempt deduplicates nothing; "
            "make it once per operation, outside the retry"
        )
    return "the attempts carried the same idempotency key, but the server ignores it (idempotency=None): it does not deduplicate"


def _downstream_type() -> type:
    from .downstream import FakeDownstream

    return FakeDownstream

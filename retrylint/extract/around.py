"""Facts around the retries, for the RTY5xx rules: what a retried operation creates
(:mod:`.idempotency`, RTY503) and how long a consumer holds a message against the queue's
visibility window (:mod:`.visibility`, RTY502)."""

from __future__ import annotations

import ast
from typing import Collection, List, Optional, Sequence

from ..model import RetryPolicy
from ..narrowing import AllOf, Source, Trigger, Words
from . import idempotency, visibility
from .context import ModuleContext

#: Words that set a visibility window.
WINDOW_WORDS = ("visibility_timeout", "VisibilityTimeout", "ack_deadline_seconds", "lock_duration",
                "VISIBILITY_TIMEOUT")
#: What else RTY502 reads: celery's limits and acks, heartbeats.
_CONTEXT_WORDS = ("time_limit", "TIME_LIMIT", "acks_late", "ACKS_LATE") + tuple(sorted(visibility.HEARTBEATS)) + (
    "auto_lock_renewer", "max_lock_renewal_duration")
_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.Expr, ast.Return, ast.For, ast.AsyncFor, ast.While, ast.With,
               ast.AsyncWith, ast.If, ast.Try)


def _has(words):
    def confirm(statement: ast.stmt, source: Source) -> bool:
        return source.has(statement, *words)

    return confirm


#: A window set in code is a site (the consumer or the tasks it judges are read around it).
WINDOWS = Trigger(text=Words(*WINDOW_WORDS), statements=_STATEMENTS, confirm=_has(WINDOW_WORDS))
#: Limits, acks and heartbeats help to read a window: kept, never a reason to parse a file.
WINDOW_CONTEXT = Trigger(text=Words(*WINDOW_WORDS), statements=_STATEMENTS, confirm=_has(_CONTEXT_WORDS),
                         context=True)
#: A celery app on a literal redis broker URL with no ``visibility_timeout``: kombu's default
#: window (1 h) applies, judged against the module's acks_late limits and countdowns.
_REDIS_URLS = ("redis://", "rediss://", "redis+socket://", "sentinel://")
_HOLDS_WORDS = ("time_limit", "TIME_LIMIT", "countdown", "retry_backoff", "default_retry_delay")
REDIS_BROKER_TEXT = AllOf(Words(*_REDIS_URLS), Words("acks_late", "ACKS_LATE", "countdown", "retry_backoff",
                                                     "default_retry_delay"))
REDIS_BROKER = Trigger(text=REDIS_BROKER_TEXT, statements=_STATEMENTS, confirm=_has(_REDIS_URLS))
REDIS_BROKER_CONTEXT = Trigger(text=REDIS_BROKER_TEXT, statements=_STATEMENTS,
                               confirm=_has(_CONTEXT_WORDS + _HOLDS_WORDS), context=True)
#: The receives whose consumers RTY502 reads.
RECEIVES = Trigger(text=Words(*WINDOW_WORDS), calls=frozenset(visibility.RECEIVES + ("apply_async",)), context=True)
#: POSTs of a session mounted with a retrying adapter may be anywhere in the module.
CREATES_CONTEXT = Trigger(text=Words("HTTPAdapter"), calls=frozenset({"post", "patch", "request", "mount"}),
                          context=True)



def _header_property(statement: ast.stmt, source: Source) -> bool:
    return "header" in statement.name.lower() and any(  # type: ignore[attr-defined]
        (d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else "") in ("property", "cached_property")
        for d in statement.decorator_list  # type: ignore[attr-defined]
    )


#: ``self._headers`` read through a ``@property`` (RTY503 looks for an idempotency key in it).
HEADER_PROPERTIES = Trigger(text=Words("property"), statements=(ast.FunctionDef,), confirm=_header_property, context=True)

TRIGGERS: List[Trigger] = [WINDOWS, WINDOW_CONTEXT, REDIS_BROKER, REDIS_BROKER_CONTEXT, RECEIVES, CREATES_CONTEXT,
                           HEADER_PROPERTIES]


def extract(ctx: ModuleContext, policies: Sequence[RetryPolicy], active: Optional[Collection[Trigger]] = None) -> List[object]:
    out: List[object] = []
    out.extend(idempotency.extract(ctx, policies))
    if active is None or WINDOWS in active or REDIS_BROKER in active:
        out.extend(visibility.extract(ctx, policies))
    return out

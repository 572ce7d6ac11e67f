"""Extractors: each finds one kind of site and builds the model for it.

Retry sites become :class:`~retrylint.model.RetryPolicy` values (hand-written loops,
recursion, one extractor per retry library); dead-letter-queue operations become
:class:`~retrylint.model.DeadLetterOperation` values. Each extractor declares a
:class:`~retrylint.narrowing.Trigger` so that the engine skips files and functions
that cannot hold its sites. Adding support for a retry library means adding an
extractor here; rules do not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, List, Optional, Sequence

from ..model import DeadLetterOperation, RetryPolicy
from ..narrowing import Trigger
from . import around, dead_letter_helpers, dead_letters, layers, library_polls, loops, recursion, strategies, waits
from .context import ModuleContext
from .libraries import LIBRARIES, built, http_clients
from .libraries.common import retries_nothing_it_lets_out, wraps_a_generator


@dataclass(frozen=True)
class Extractor:
    name: str
    extract: Callable[[ModuleContext], List[RetryPolicy]]
    trigger: Trigger


@dataclass(frozen=True)
class DeadLetterExtractor:
    name: str
    extract: Callable[[ModuleContext], List[DeadLetterOperation]]
    trigger: Trigger


EXTRACTORS: List[Extractor] = [
    Extractor("loops", loops.extract_loops, loops.TRIGGER),
    Extractor("recursion", recursion.extract_recursions, recursion.TRIGGER),
    Extractor("strategies", strategies.extract_strategies, strategies.TRIGGER),
] + [Extractor(name, module.extract, module.TRIGGER) for name, module in LIBRARIES]

DEAD_LETTER_EXTRACTORS: List[DeadLetterExtractor] = [
    DeadLetterExtractor("dead-letters", dead_letters.extract_dead_letters, dead_letters.TRIGGER),
    DeadLetterExtractor("dead-letter-helpers", dead_letters.extract_helper_dead_letters, dead_letter_helpers.TRIGGER),
]


def triggers() -> List[Trigger]:
    """What narrowing looks for: every extractor's sites, then what helps to read them."""
    return [e.trigger for e in EXTRACTORS] + [e.trigger for e in DEAD_LETTER_EXTRACTORS] + around.TRIGGERS + built.TRIGGERS + [
        dead_letters.CONTEXT,
        waits.SLEEPERS,
        layers.CONTEXT,
        http_clients.READERS,
    ]


def extract_policies(ctx: ModuleContext, active: Optional[Collection[Trigger]] = None) -> List[RetryPolicy]:
    """``active``: the triggers the file matched (others cannot find anything); None: all."""
    policies: List[RetryPolicy] = []
    for extractor in EXTRACTORS:
        if active is None or extractor.trigger in active:
            policies.extend(extractor.extract(ctx))
    # A retry decorator that waits for a state is a poll, as the loop that does so is.
    policies = [p for p in policies if not (p.is_library and library_polls.waits_for_a_state(p, ctx))]
    # A retry decorator on a generator function wraps nothing that can fail.
    policies = [p for p in policies if not (p.is_library and p.anchor is not None and wraps_a_generator(p.anchor, ctx))]
    # ... and one whose function lets out only errors it does not retry never retries.
    policies = [p for p in policies if not (p.is_library and retries_nothing_it_lets_out(p, ctx))]
    policies.sort(key=lambda p: (p.location.line, p.location.column))
    return layers.annotate(ctx, policies)  # retries around calls that retry themselves (RTY501)


def extract_dead_letters(ctx: ModuleContext, active: Optional[Collection[Trigger]] = None) -> List[DeadLetterOperation]:
    operations: List[DeadLetterOperation] = []
    for extractor in DEAD_LETTER_EXTRACTORS:
        if active is None or extractor.trigger in active:
            operations.extend(extractor.extract(ctx))
    operations.sort(key=lambda o: (o.location.line, o.location.column))
    # A replay loop holding both a broker call and a helper call is one replay.
    seen = set()
    unique = []
    for operation in operations:
        key = (operation.kind, operation.loop_location) if operation.loop_location is not None else id(operation)
        if key in seen:
            continue
        seen.add(key)
        unique.append(operation)
    return unique


def extract_around(ctx: ModuleContext, policies: Sequence[RetryPolicy], active: Optional[Collection[Trigger]] = None) -> List[object]:
    """Facts around the retries (RTY5xx): see :mod:`retrylint.extract.around`."""
    return around.extract(ctx, policies, active)

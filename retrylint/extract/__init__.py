"""Extractors: each finds one kind of retry site and builds a RetryPolicy for it.

Adding support for a retry library means adding an extractor here; rules do not change.
"""

from __future__ import annotations

from typing import Callable, List

from ..model import RetryPolicy
from .context import ModuleContext
from .loops import extract_loops
from .recursion import extract_recursions

Extractor = Callable[[ModuleContext], List[RetryPolicy]]

EXTRACTORS: List[Extractor] = [extract_loops, extract_recursions]


def extract_policies(ctx: ModuleContext) -> List[RetryPolicy]:
    policies: List[RetryPolicy] = []
    for extractor in EXTRACTORS:
        policies.extend(extractor(ctx))
    policies.sort(key=lambda p: (p.location.line, p.location.column))
    return policies

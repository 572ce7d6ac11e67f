"""The rule interface, modelled on Fixit: one class per rule, docs and test cases inside."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from typing import ClassVar, Iterable, Optional, Sequence, Tuple

from typing import TYPE_CHECKING

from ..model import DeadLetterOperation, Location, RetryPolicy

if TYPE_CHECKING:  # pragma: no cover
    from ..fixes import Fix, Fixer
from ..settings import Settings

#: Each rule's page in the repository, generated from its docstring by docs/rules/generate.py.
DOCS_URL = "https://github.com/retrylint/retrylint/blob/main/docs/rules/{code}.md"


@dataclass(frozen=True)
class Valid:
    """Code the rule must stay silent on."""

    code: str
    #: Why it is fine (shown when the case fails).
    why: str = ""


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report."""

    code: str
    #: The line the finding must be on (1-based, counted in the dedented code); None: any line.
    line: Optional[int] = None
    #: Text the message must contain.
    message: Optional[str] = None


@dataclass(frozen=True)
class Diagnostic:
    """What a rule says about one place of one retry site."""

    message: str
    location: Location
    #: Lines where ``# noqa`` suppresses it.
    noqa_lines: Tuple[int, ...] = ()


class Rule:
    """Base class: subclasses set ``code``, ``name``, a ruff-shaped docstring, VALID/INVALID."""

    code: ClassVar[str]
    name: ClassVar[str]
    #: One line for ``retrylint rule --all`` and SARIF.
    summary: ClassVar[str] = ""
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        """Judge a retry site (retry rules override this)."""
        return ()

    def check_dead_letter(self, operation: DeadLetterOperation, settings: Settings) -> Iterable[Diagnostic]:
        """Judge a dead-letter-queue operation (DLQ rules override this)."""
        return ()

    def check_around(self, site: object, settings: Settings) -> Iterable[Diagnostic]:
        """Judge a fact around a retry (RTY5xx rules override this): a
        :class:`~retrylint.model.VisibilityWindow` or a :class:`~retrylint.model.RetriedCreate`."""
        return ()

    def fix(self, policy: RetryPolicy, fixer: "Fixer") -> "Optional[Fix]":
        """A fix for this rule's finding on ``policy``, when there is a safe or unsafe one."""
        return None

    # ------------------------------------------------------------ helpers

    @classmethod
    def docs(cls) -> str:
        return textwrap.dedent(inspect.getdoc(cls) or "").strip()

    @classmethod
    def url(cls) -> str:
        return DOCS_URL.format(code=cls.code)

    @staticmethod
    def at(site, message: str, location: Optional[Location] = None) -> Diagnostic:
        """A diagnostic for a site (a RetryPolicy or a DeadLetterOperation)."""
        where = location or site.location
        lines = tuple(sorted(set(site.header_lines) | set(where.lines)))
        return Diagnostic(message, where, lines)

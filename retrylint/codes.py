"""Every rule's code and name, as data: what configuration and the command line need to read
``select``/``ignore`` lists without importing the rules (and libcst with them) at start-up.
``tests/retrylint/test_startup.py`` checks that it matches :mod:`retrylint.rules`."""

from __future__ import annotations

from typing import Dict

NAMES: Dict[str, str] = {
    "RTY001": "syntax-error",
    "RTY101": "unbounded-retry-loop",
    "RTY102": "unbounded-retry-policy",
    "RTY103": "unbounded-retry-recursion",
    "RTY201": "immediate-retry",
    "RTY202": "fixed-delay-retry",
    "RTY203": "backoff-without-jitter",
    "RTY204": "backoff-without-cap",
    "RTY301": "retry-on-any-exception",
    "RTY302": "retry-on-permanent-status",
    "RTY303": "retry-on-permanent-exception",
    "RTY401": "dlq-auto-replay",
    "RTY402": "dead-letter-without-context",
    "RTY403": "unthrottled-dlq-replay",
    "RTY501": "retry-amplification",
    "RTY502": "handler-outlives-visibility-timeout",
    "RTY503": "non-idempotent-retry",
    "RTY504": "jitter-collapses-at-cap",
}

#: name → code
CODES: Dict[str, str] = {name: code for code, name in NAMES.items()}

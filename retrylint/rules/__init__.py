"""Every rule, by code."""

from __future__ import annotations

from typing import Dict, List, Type

from .base import Diagnostic, Invalid, Rule, Valid
from .rty001_syntax_error import SyntaxErrorRule
from .rty101_unbounded_retry_loop import UnboundedRetryLoop
from .rty102_unbounded_retry_policy import UnboundedRetryPolicy
from .rty103_unbounded_retry_recursion import UnboundedRetryRecursion
from .rty201_immediate_retry import ImmediateRetry
from .rty202_fixed_delay_retry import FixedDelayRetry
from .rty203_backoff_without_jitter import BackoffWithoutJitter
from .rty204_backoff_without_cap import BackoffWithoutCap
from .rty301_retry_on_any_exception import RetryOnAnyException
from .rty302_retry_on_permanent_status import RetryOnPermanentStatus
from .rty303_retry_on_permanent_exception import RetryOnPermanentException
from .rty401_dlq_auto_replay import DlqAutoReplay
from .rty402_dead_letter_without_context import DeadLetterWithoutContext
from .rty403_unthrottled_dlq_replay import UnthrottledDlqReplay
from .rty501_retry_amplification import RetryAmplification
from .rty502_handler_outlives_visibility_timeout import HandlerOutlivesVisibilityTimeout
from .rty503_non_idempotent_retry import NonIdempotentRetry
from .rty504_jitter_collapses_at_cap import JitterCollapsesAtCap

RULES: List[Type[Rule]] = [
    SyntaxErrorRule,
    UnboundedRetryLoop,
    UnboundedRetryPolicy,
    UnboundedRetryRecursion,
    ImmediateRetry,
    FixedDelayRetry,
    BackoffWithoutJitter,
    BackoffWithoutCap,
    RetryOnAnyException,
    RetryOnPermanentStatus,
    RetryOnPermanentException,
    DlqAutoReplay,
    DeadLetterWithoutContext,
    UnthrottledDlqReplay,
    RetryAmplification,
    HandlerOutlivesVisibilityTimeout,
    NonIdempotentRetry,
    JitterCollapsesAtCap,
]

BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in RULES}
BY_NAME: Dict[str, Type[Rule]] = {rule.name: rule for rule in RULES}

__all__ = ["RULES", "BY_CODE", "BY_NAME", "Rule", "Valid", "Invalid", "Diagnostic", "SyntaxErrorRule"]

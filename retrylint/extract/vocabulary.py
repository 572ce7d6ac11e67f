"""Names the loop extractor reads, shared with its ``ast`` mirror (:mod:`.candidates`),
so that narrowing and extraction cannot drift apart."""

from __future__ import annotations

import re

#: Calls that are not the operation of an attempt (``int(x)``, ``len(items)``).
#: Functions that read a clock, by their last name (``time.monotonic``, a package's own ``metrics.time``).
CLOCK_READS = frozenset({"monotonic", "time", "perf_counter", "monotonic_ns", "time_ns"})
TRIVIAL_CALLS = frozenset({"int", "float", "str", "bool", "len", "dict", "list", "tuple", "set", "repr", "print", "isinstance"})
#: A call that decides to retry: ``if not retry_func(response): return response``.
RETRY_DECISION = re.compile(r"(retry|retriable|retryable)", re.I)
#: Names of what is still failing: ``if not to_retry: break`` means everything succeeded.
LEFTOVER = re.compile(r"(retry|retries|fail|error|pending|remaining|left|todo|unfinished|outstanding|missing)", re.I)
#: A protocol's "not yet" answer: ``authorization_pending`` (OAuth device flow), ``slow_down``,
#: a job ``IN_PROGRESS``. A loop that goes round only on one of these polls; it retries no failure.
PENDING = re.compile(
    r"(pending|slow_down|in_?progress|not_?ready|not_?yet|processing|provisioning|queued|running|"
    r"waiting|starting|creating|initiali[sz]ing|accepted|"
    # "not everything done yet, call again": Databricks ``PARTIAL_DELETE``
    r"partial_?(delete|deletion|content|result|response|progress)|"
    # libcurl's "call again now": ``pycurl.E_CALL_MULTI_PERFORM``
    r"call_multi_perform)",
    re.I,
)

"""The orders consumer done wrong, on purpose: every retry and dead-letter mistake of
RETRY_DOCTRINE.md in one place. ``retrylint`` must flag each one (tests/test_lint.py) and the
plugin's checks must fail on each one at run time (tests/test_orders_bad.py).
Do not copy this code."""

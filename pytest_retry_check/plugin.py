"""pytest entry point (``pytest11``) of pytest_retry_check."""

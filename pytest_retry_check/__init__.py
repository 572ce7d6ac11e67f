"""pytest_retry_check: a fake clock, a failing downstream and property checks for retry code."""

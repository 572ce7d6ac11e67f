"""retrylint: a static checker for retry correctness."""

__version__ = "0.1.0"

"""The plugin's warning classes, in a module of their own: the plugin imports them at start-up,
and the machinery that raises them loads only when a test uses it."""

__all__ = ["CapturedClockWarning", "RealTimeWarning", "UntestedTimeoutWarning"]


class RealTimeWarning(UserWarning):
    """The test waited for real, or holds a real clock function, while its fake clock ran."""


class CapturedClockWarning(RealTimeWarning):
    """A real clock or sleep function was captured before the fake clock started (a dataclass
    ``default_factory``, a default argument, a class attribute, an object's attribute): it reads
    (or sleeps on) real time while the test runs on virtual time. Turn it into an error with
    ``-W error::pytest_retry_check.CapturedClockWarning`` (or ``filterwarnings``)."""


class UntestedTimeoutWarning(UserWarning):
    """A slow answer over the real HTTP server (``downstream.url``) came back after virtual
    seconds that a client timeout would have cut short: a socket's timeout runs on real time, so
    it could not fire, and the client got the answer. Test timeouts with the in-process routes
    or the callable, whose timeouts are virtual."""

"""Per-route scripts of the fake downstream: ``fake_downstream(routes={"GET /orders/*": dict(fail_first=2), "/health": "ok"})``.

A route key is ``"[METHOD ]PATH"``; a path ending in ``*`` matches every path that starts with
what comes before it, and the query string is ignored. The first matching route wins; a call
that matches none follows the downstream's own script. Each route counts its own calls, so
``fail_first`` and ``outcomes`` apply per route, as different endpoints of a real service fail
differently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

__all__ = ["Route", "parse_routes", "match_route"]

_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


@dataclass(frozen=True)
class Route:
    key: str
    method: Optional[str]  # None: any method
    path: str
    prefix: bool
    scenario: Any  # a Scenario

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and method.upper() != self.method:
            return False
        path = path.split("?", 1)[0] or "/"
        return path.startswith(self.path) if self.prefix else path == self.path


def parse_routes(routes: Optional[Mapping[str, Any]]) -> Tuple[Route, ...]:
    """Routes from ``{key: script}``; a script is a Scenario, a dict of script keywords, or an
    outcome (``"ok"``, ``503``, ``hang()``: every call to the route gets it)."""
    __tracebackhide__ = True
    from .downstream import Outcome, Scenario, as_outcome

    if routes is None:
        return ()
    if not isinstance(routes, Mapping):
        raise TypeError(f"routes must be a mapping of 'METHOD /path' to a script, got {routes!r}")
    parsed = []
    for key, script in routes.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"a route is 'METHOD /path' or '/path', got {key!r}")
        words = key.split()
        method = words[0].upper() if len(words) == 2 else None
        path = words[-1]
        if len(words) > 2 or (method is not None and method not in _METHODS) or not path.startswith("/"):
            raise ValueError(f"a route is 'METHOD /path' or '/path' (a trailing * matches a prefix), got {key!r}")
        if isinstance(script, Scenario):
            scenario = script
        elif isinstance(script, Mapping):
            scenario = Scenario(**script)
        elif isinstance(script, (Outcome, int, str, BaseException, type)):
            scenario = Scenario(then=as_outcome(script))
        else:
            raise TypeError(f"route {key!r}: a script is a Scenario, a dict of script keywords or an outcome, got {script!r}")
        prefix = path.endswith("*")
        parsed.append(Route(key, method, path[:-1] if prefix else path, prefix, scenario))
    return tuple(parsed)


def match_route(routes: Tuple[Route, ...], method: str, path: str) -> Optional[Route]:
    for route in routes:
        if route.matches(method, path):
            return route
    return None

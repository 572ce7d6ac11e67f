"""What the module's own helpers do, read once from the whole file's ``ast``.

A retry loop often hands its failure to a helper: ``self._raise_for(e)`` classifies and
raises, ``if not _is_eintr(e): raise`` handles EINTR. Narrowing blanks the helpers'
definitions before libcst sees the loop, so their facts are read here, from the ``ast``
that the syntax check already built, and handed to the extractors with the module.

Keys are ``name`` for module functions and ``Class.name`` for methods (as
:func:`retrylint.extract.waits.find_sleepers` names them).
"""

from __future__ import annotations

import ast
import re
from typing import ClassVar, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

#: errno values that mean "interrupted" or "not ready" (as :mod:`retrylint.extract.errors`).
NOT_YET_ERRNO = re.compile(r"\b(EINTR|EAGAIN|EWOULDBLOCK|EINPROGRESS|EALREADY)\b")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Summaries:
    """Facts about the module's helpers, each worked out when an extractor first asks about
    that helper (most files ask about a few helpers, or none)."""

    EMPTY: ClassVar["Summaries"]

    def __init__(self, tree: Optional[ast.Module] = None) -> None:
        self._functions: Dict[str, Tuple[Optional[str], ast.AST]] = dict(_functions(tree)) if tree is not None else {}
        self._raisers: Optional[FrozenSet[str]] = None
        self._errno: Dict[str, bool] = {}
        self._limiters: Dict[str, bool] = {}
        self._limit_names: Dict[str, FrozenSet[str]] = {}
        self._may_raise: Dict[str, bool] = {}
        self._refusers: Dict[str, bool] = {}
        self._clears: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {}
        self._status_checkers: Dict[str, bool] = {}
        self._status_raise_kinds: Dict[str, Optional[str]] = {}
        self._prompters: Dict[str, bool] = {}
        self._answerers: Dict[str, bool] = {}

    @property
    def raisers(self) -> FrozenSet[str]:
        """Helpers every path of which raises: a handler that calls one gives up."""
        if self._raisers is None:
            raisers: set = set()
            # A helper that ends by calling another raiser raises too: a few rounds reach a fixpoint.
            for _ in range(4):
                found = {key for key, (owner, func) in self._functions.items()
                         if _always_raises(func.body, owner, raisers)}  # type: ignore[attr-defined]
                if found == raisers:
                    break
                raisers = found
            self._raisers = frozenset(raisers)
        return self._raisers

    def raises(self, key: Optional[str]) -> bool:
        return key is not None and key in self._functions and key in self.raisers

    def tests_errno(self, key: Optional[str]) -> bool:
        """The helper tests an "interrupted / not ready" errno."""
        return self._asked(key, self._errno, _tests_errno)

    def limits(self, key: Optional[str]) -> bool:
        """The helper counts or times the attempts and raises once they are spent
        (``self._retries += 1; if self._retries > self.max_retries: raise``)."""
        return self._asked(key, self._limiters, _raises_when_spent)

    def limit_names(self, key: Optional[str]) -> FrozenSet[str]:
        """The names the helper compares before it raises (``if timeouts + errors < max_attempts:
        return`` then ``raise``; ``if self._retries > self.max: raise``): a loop that steps one
        of them and then calls the helper is bounded there (bleak-retry-connector's
        ``_raise_if_needed`` closure)."""
        if key is None or key not in self._functions:
            return frozenset()
        if key not in self._limit_names:
            self._limit_names[key] = _compared_before_raise(self._functions[key][1])
        return self._limit_names[key]

    def refuses(self, key: Optional[str]) -> bool:
        """The helper raises an error of its own outside any ``except`` (``raise RuntimeError(...)``
        in a Retry subclass's ``increment``): it refuses some calls, not only passes errors on."""
        return self._asked(key, self._refusers, _raises_outside_handlers)

    def may_raise(self, key: Optional[str]) -> bool:
        """The helper raises on some path (a ``raise`` of its own): handed a response, it
        classifies it (meraki's ``_handle_client_error`` raises unless the 4xx is retryable)."""
        return self._asked(key, self._may_raise, lambda func: any(
            isinstance(n, ast.Raise) for s in func.body for n in _own_nodes(s)))  # type: ignore[attr-defined]

    def raises_for_status(self, key: Optional[str]) -> bool:
        """The helper raises for a response that is not a success (``if response.status != 200:
        raise ...``, ``response.raise_for_status()``): a status test after it sees successes only."""
        return self._asked(key, self._status_checkers, _raises_on_bad_status)

    def __contains__(self, key: Optional[str]) -> bool:
        """Is ``key`` a function this module defines?"""
        return key is not None and key in self._functions

    def status_raise_kind(self, key: Optional[str]) -> Optional[str]:
        """What the helper raises for a failed status (:func:`status_raise_kind`), None for a
        function this module does not define or one that raises nothing for a status."""
        if key is None or key not in self._functions:
            return None
        if key not in self._status_raise_kinds:
            self._status_raise_kinds[key] = status_raise_kind(self._functions[key][1])
        return self._status_raise_kinds[key]

    def asks_a_person(self, key: Optional[str]) -> bool:
        """The helper reads what a person types (``input()``, ``getpass``, a prompt call, or
        ``input`` handed to a thread): a loop around it re-prompts, it retries nothing."""
        return self._asked(key, self._prompters, _asks_a_person)

    def answers_failures(self, key: Optional[str]) -> bool:
        """The helper answers a failure with a value: a catch-all handler returns what the failure
        said (``except Exception as e: return json.loads(str(e))``, the error body of an HTTP error).
        A retry around it sees only the failures the helper could not answer, not the server's
        refusals."""
        return self._asked(key, self._answerers, _answers_failures)

    def clears(self, key: Optional[str]) -> FrozenSet[str]:
        """The ``self`` attributes the helper may reset to ``None``/``False`` (``self.access_token
        = None`` after an auth error), also through the methods of ``self`` it calls, a few deep."""
        return self._cleared(key, set())[0]

    def inherited_calls(self, key: Optional[str]) -> FrozenSet[str]:
        """``Class.method`` keys the helper reaches (as :meth:`clears` follows it) that the module
        does not define: methods of a base class, which the program view may know."""
        return self._cleared(key, set())[1]

    def _cleared(self, key: Optional[str], seen: set) -> Tuple[FrozenSet[str], FrozenSet[str]]:
        none: Tuple[FrozenSet[str], FrozenSet[str]] = (frozenset(), frozenset())
        if key is None or key not in self._functions:
            return none
        if key in self._clears:
            return self._clears[key]
        if key in seen or len(seen) > 8:
            return none  # a cycle, or deeper than any repair worth following
        seen.add(key)
        owner, func = self._functions[key]
        found, inherited = set(self_attributes_cleared(func)), set()
        for node in ast.walk(func):
            if isinstance(node, ast.Call):
                called = call_key(node.func, owner)
                if called is not None and called not in self._functions and owner and called.startswith(f"{owner}."):
                    inherited.add(called)
                attributes, further = self._cleared(called, seen)
                found |= attributes
                inherited |= further
        self._clears[key] = (frozenset(found), frozenset(inherited))
        return self._clears[key]

    def _asked(self, key: Optional[str], answers: Dict[str, bool], question) -> bool:
        if key is None or key not in self._functions:
            return False
        if key not in answers:
            answers[key] = question(self._functions[key][1])
        return answers[key]


Summaries.EMPTY = Summaries()


#: What reads a person's answer, called (``input(...)``) or handed to a thread (``to_thread(input, ...)``).
_PERSON_READS = frozenset({"input", "raw_input", "getpass"})
_PERSON_CALLS = _PERSON_READS | {"prompt", "confirm"}


def _asks_a_person(func: ast.AST) -> bool:
    own = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)} if isinstance(func, _FUNCTIONS) else set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            called = node.func
            name = called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) else ""
            if name in _PERSON_CALLS:
                return True
            if any(isinstance(arg, ast.Name) and arg.id in _PERSON_READS and arg.id not in own for arg in node.args):
                return True
    return False


#: ``except Exception`` / ``except BaseException``: a handler that catches everything.
CATCH_ALL = frozenset({"Exception", "BaseException"})


def _answers_failures(func: ast.AST) -> bool:
    for node in _own_nodes(func):
        if not isinstance(node, (ast.Try,) + _try_star()):
            continue
        for handler in node.handlers:
            caught = handler.type
            if not (caught is None or isinstance(caught, ast.Name) and caught.id in CATCH_ALL) or not handler.name:
                continue
            inside = [n for s in handler.body for n in _own_nodes(s)]
            reads_failure = any(isinstance(n, ast.Name) and n.id == handler.name for n in inside)
            returns_value = any(isinstance(n, ast.Return) and n.value is not None
                                and not (isinstance(n.value, ast.Constant) and n.value.value in (None, False))
                                for n in inside)
            if reads_failure and returns_value:
                return True
    return False


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it holds, not what nested functions and classes hold."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child for child in ast.iter_child_nodes(current)
                     if not isinstance(child, _FUNCTIONS + (ast.Lambda, ast.ClassDef)))


def self_attributes_cleared(func: ast.AST) -> Iterator[str]:
    """``self.access_token = None`` / ``self._ready = False`` anywhere in the function."""
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in (None, False):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    yield target.attr


def summarise(tree: ast.Module) -> Summaries:
    return Summaries(tree)


def _functions(tree: ast.Module) -> Iterator[Tuple[str, Tuple[Optional[str], ast.AST]]]:
    outer: List[ast.AST] = []
    for statement in tree.body:
        if isinstance(statement, _FUNCTIONS):
            outer.append(statement)
            yield statement.name, (None, statement)
        elif isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, _FUNCTIONS):
                    outer.append(member)
                    yield f"{statement.name}.{member.name}", (statement.name, member)
    # Helpers defined inside a function (segment's ``apply_backoff`` closure): the calls of the
    # enclosing function reach them.
    for name, inner in unique_nested_functions(tree, outer):
        yield name, (None, inner)


def unique_nested_functions(tree: ast.Module, outer: Sequence[ast.AST]) -> Iterator[Tuple[str, ast.AST]]:
    """Functions defined inside the ``outer`` functions and methods, by their bare name when it
    is unique in the module and no module-level function has it."""
    taken = {f.name for f in tree.body if isinstance(f, _FUNCTIONS)}
    nested: Dict[str, List[ast.AST]] = {}
    for func in outer:
        for inner in _nested_functions(func.body):  # type: ignore[attr-defined]
            nested.setdefault(inner.name, []).append(inner)  # type: ignore[attr-defined]
    for name, found in nested.items():
        if len(found) == 1 and name not in taken:
            yield name, found[0]


def _nested_functions(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    stack = list(body)
    while stack:
        statement = stack.pop()
        if isinstance(statement, _FUNCTIONS):
            yield statement
        elif not isinstance(statement, ast.ClassDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(statement, field, ()) or ())


def call_key(func: ast.expr, owner: Optional[str]) -> Optional[str]:
    """``helper(...)`` -> ``helper``; ``self.helper(...)`` in class ``C`` -> ``C.helper``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return f"{owner}.{func.attr}" if owner else None
    return None


def _always_raises(body: Sequence[ast.stmt], owner: Optional[str], raisers: set) -> bool:
    """Does every path through ``body`` end in ``raise``? (``return`` or falling off: no.)"""
    for statement in body:
        if isinstance(statement, ast.Raise):
            return True
        if isinstance(statement, (ast.Return, ast.Continue, ast.Break)):
            return False
        if isinstance(statement, ast.Expr):
            value = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
            if isinstance(value, ast.Call) and call_key(value.func, owner) in raisers:
                return True
        elif isinstance(statement, ast.If):
            if _always_raises(statement.body, owner, raisers) and _always_raises(statement.orelse, owner, raisers):
                return True
            if _may_leave(statement, owner, raisers):
                return False
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            if _always_raises(statement.body, owner, raisers):
                return True
            if _may_leave(statement, owner, raisers):
                return False
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match) + _try_star()):
            if _may_leave(statement, owner, raisers):
                return False
    return False


def _may_leave(statement: ast.stmt, owner: Optional[str], raisers: set) -> bool:
    """A ``return`` inside (not in a nested function): the helper may return instead."""
    return any(isinstance(node, ast.Return) for node in _own_nodes(statement))


def _try_star() -> tuple:
    return (ast.TryStar,) if hasattr(ast, "TryStar") else ()


def _raises_when_spent(func: ast.AST) -> bool:
    """Steps a count (``self._retries += 1``) or reads the clock, and raises under an ``if``
    that compares: the attempts end there, after a number we may not know."""
    steps = clock = False
    compares = []
    for node in ast.walk(func):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            steps = True
        elif isinstance(node, ast.Attribute) and node.attr in ("monotonic", "time", "perf_counter"):
            clock = True
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            compares.append(node)
    if not (steps or clock):
        return False
    return any(isinstance(n, ast.Raise) for node in compares for s in node.body for n in ast.walk(s))


def _raises_outside_handlers(func: ast.AST) -> bool:
    stack = [(s, False) for s in getattr(func, "body", [])]
    while stack:
        node, in_handler = stack.pop()
        if isinstance(node, ast.Raise) and node.exc is not None and not in_handler:
            return True
        if isinstance(node, _FUNCTIONS + (ast.Lambda, ast.ClassDef)):
            continue
        inside = in_handler or isinstance(node, ast.ExceptHandler)
        stack.extend((child, inside) for child in ast.iter_child_nodes(node))
    return False


def _compared_before_raise(func: ast.AST) -> FrozenSet[str]:
    """Names (``n``, ``self.n``) in the comparisons of ``if`` tests that raise, or that return
    early from a function whose last statement raises."""
    body = getattr(func, "body", [])
    ends_raising = bool(body) and isinstance(body[-1], ast.Raise)
    names: set = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.If) or not any(isinstance(t, ast.Compare) for t in ast.walk(node.test)):
            continue
        raises = any(isinstance(n, ast.Raise) for s in node.body for n in ast.walk(s))
        returns_early = ends_raising and len(node.body) == 1 and isinstance(node.body[0], ast.Return) \
            and node.body[0].value is None
        if raises or returns_early:
            for n in ast.walk(node.test):
                if isinstance(n, ast.Name):
                    names.add(n.id)
                elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                    names.add(f"self.{n.attr}")
    return frozenset(names)


_BAD_STATUS_OPS = (ast.NotEq, ast.NotIn, ast.Gt, ast.GtE)


def _raise_for_status_calls(func: ast.AST) -> Tuple[int, int]:
    """(calls of ``raise_for_status()`` whose error leaves as it is, calls inside a ``try`` whose
    handler raises something else in its place: ``except HTTPError as e: raise ApiError(...) from e``)."""
    wrapped: set = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Try) and any(any(isinstance(n, ast.Raise) and n.exc is not None for n in ast.walk(h))
                                             for h in node.handlers):
            for statement in node.body:
                wrapped.update(id(n) for n in ast.walk(statement) if _is_raise_for_status(n))
    retryable_only = _only_for_retryable(func)
    calls = [n for n in ast.walk(func) if _is_raise_for_status(n) and id(n) not in retryable_only]
    inside = sum(1 for n in calls if id(n) in wrapped)
    return len(calls) - inside, inside


def _only_for_retryable(func: ast.AST) -> set:
    """``raise_for_status()`` calls under ``if r.status_code in (408, 429) or r.status_code >= 500:``
    (logfire's ``raise_for_retryable_status``): they raise for the retryable statuses only."""
    found: set = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.If) or not any(isinstance(n, ast.Attribute) and n.attr in ("status", "status_code")
                                                   for n in ast.walk(node.test)):
            continue
        numbers = [n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant) and isinstance(n.value, int)
                   and not isinstance(n.value, bool)]
        ops = [op for n in ast.walk(node.test) if isinstance(n, ast.Compare) for op in n.ops]
        if numbers and all(v in (408, 429) or 500 <= v < 600 for v in numbers) \
                and all(isinstance(op, (ast.In, ast.Eq, ast.GtE, ast.Gt)) for op in ops):
            found.update(id(n) for s in node.body for n in ast.walk(s) if _is_raise_for_status(n))
    return found


def _is_raise_for_status(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raise_for_status"


def status_raise_kind(func: ast.AST) -> Optional[str]:
    """What a function raises for a failed HTTP status: ``"http"`` when the HTTP library's own
    error leaves it (``raise_for_status()``), ``"own"`` when it raises an error of its own for 4xx
    too (``if r.status_code != 200: raise ApiError(r)``, ``>= 400``, a wrapped ``HTTPError``), None
    when it raises for 5xx only (``>= 500``) or not at all."""
    free, wrapped = _raise_for_status_calls(func)
    if free:
        return "http"
    if wrapped:
        return "own"  # the HTTP error, wrapped into the package's own
    for test in _status_raise_tests(func):
        low = test.left.value if isinstance(test.left, ast.Constant) and isinstance(test.left.value, int) else None
        if low is not None and low <= 400 and isinstance(test.ops[0], (ast.LtE, ast.Lt)):
            return "own"  # ``elif 400 <= response.status_code < 500: raise BadRequestError(...)``
        if len(test.ops) != 1:
            continue
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.NotEq, ast.NotIn)):
            return "own"
        bound = right.value if isinstance(right, ast.Constant) and isinstance(right.value, int) else None
        if bound is not None and (isinstance(op, ast.Gt) and bound < 400 or isinstance(op, ast.GtE) and bound <= 400):
            return "own"
    return None


def _status_raise_tests(func: ast.AST) -> Iterator[ast.Compare]:
    """``if r.status_code <op> …: raise …``: the comparisons of a status that raise."""
    for node in ast.walk(func):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and any(isinstance(s, ast.Raise) for s in node.body):
            left = node.test.left
            if isinstance(left, ast.Constant) and node.test.comparators:
                left = node.test.comparators[0]  # ``400 <= r.status_code < 500``
            if isinstance(left, ast.Attribute) and left.attr in ("status", "status_code"):
                yield node.test


def _raises_on_bad_status(func: ast.AST) -> bool:
    if any(_is_raise_for_status(n) for n in ast.walk(func)):
        return True
    return any(all(isinstance(op, _BAD_STATUS_OPS) for op in test.ops) for test in _status_raise_tests(func))


def _tests_errno(func: ast.AST) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and NOT_YET_ERRNO.fullmatch(node.attr):
            return True
        if isinstance(node, ast.Name) and NOT_YET_ERRNO.fullmatch(node.id):
            return True
    return False


def key_of(func_name: Optional[str], receiver: Optional[str], owner: Optional[str]) -> Optional[str]:
    """The same key from libcst's side: a plain call, or a call on ``self``/``cls``."""
    if func_name is None:
        return None
    if receiver is None:
        return func_name
    if receiver in ("self", "cls") and owner:
        return f"{owner}.{func_name}"
    return None


"""Control flow inside a loop: what runs after a statement, and where success leaves."""

from __future__ import annotations

import builtins
from typing import FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..syntax import (
    CONTINUE,
    DEFERRED,
    EXITS,
    FALL,
    LOOPS,
    RAISE,
    dotted_name,
    if_branches,
    last_name,
    outcomes,
    statement_outcomes,
    statements,
    unwrap_await,
    walk,
)
from .context import ModuleContext
from .status import status_range


def rest_after(node: cst.CSTNode, stop: cst.CSTNode, ctx: ModuleContext) -> List[cst.CSTNode]:
    """Statements that run after ``node`` finishes normally, up to the end of ``stop``'s body."""
    out: List[cst.CSTNode] = []
    current = node
    while current is not stop:
        parent = ctx.parent(current)
        if parent is None:
            break
        if isinstance(parent, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module)):
            members = statements(parent.body if isinstance(parent, cst.Module) else parent)
            anchor = current.body[-1] if isinstance(current, cst.SimpleStatementLine) else current
            for index, member in enumerate(members):
                if member is anchor:
                    out.extend(members[index + 1 :])
                    break
        elif isinstance(parent, cst.SimpleStatementLine):
            members = list(parent.body)
            for index, member in enumerate(members):
                if member is current:
                    out.extend(members[index + 1 :])
                    break
            grand = ctx.parent(parent)
            if isinstance(grand, (cst.IndentedBlock, cst.Module)):
                block = statements(grand.body if isinstance(grand, cst.Module) else grand)
                last = parent.body[-1]
                for index, member in enumerate(block):
                    if member is last:
                        out.extend(block[index + 1 :])
                        break
                current = grand
                continue
        current = parent
    return out


def in_handler(node: cst.CSTNode, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """Is ``node`` inside an ``except`` handler of ``loop``'s own body?"""
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            return False
        if isinstance(ancestor, cst.ExceptHandler):
            return True
    return False


def walk_success(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Walk a success path: no nested defs or loops, no except handlers of nested trys."""
    return walk(root, skip=DEFERRED + LOOPS + (cst.ExceptHandler,))


def innermost_guard(node: cst.CSTNode, roots: Set[int], ctx: ModuleContext) -> Tuple[Optional[cst.If], bool]:
    """The If that decides whether ``node`` runs (below ``roots``), and whether ``node`` is in its body."""
    child = node
    for ancestor in ctx.ancestors(node):
        if id(child) in roots:
            return None, True
        if isinstance(ancestor, cst.If):
            return ancestor, ctx.is_inside(node, ancestor.body)
        child = ancestor
    return None, True


def exits_in(stmts: Sequence[cst.CSTNode], ctx: ModuleContext) -> List[Tuple[cst.CSTNode, Optional[cst.If], bool]]:
    """Every break/return on a success path, with its innermost guard and branch."""
    roots = set(map(id, stmts))
    found = []
    for root in stmts:
        for node in walk_success(root):
            if isinstance(node, (cst.Return, cst.Break)):
                guard, positive = innermost_guard(node, roots, ctx)
                found.append((node, guard, positive))
    return found


def guard_exits(node: cst.If, ctx: ModuleContext) -> bool:
    """Does one way through this If leave the loop?

    Either a branch exits (``if attempt >= 5: raise``), or a branch goes round again and
    what follows the If exits (``if retry.should_retry(): continue`` then ``raise``).
    """
    body, orelse = if_branches(node)
    for branch in (body, orelse):
        if branch is not None and outcomes(branch) & EXITS:
            return True
    if any(isinstance(n, cst.Continue) for n in walk(node, skip=DEFERRED + LOOPS)):
        parent = ctx.parent(node)
        after = _outcomes_after(node, ctx)
        if after is not None:
            if FALL in after and not after & {CONTINUE}:
                # ``except Timeout: if n <= MAX: sleep(2); continue`` then ``break`` after the
                # try (dashscope): the handler falls out of the try into the exit
                after = (after - {FALL}) | _after_handler(parent, ctx)
            return bool(after) and FALL not in after and bool(after & EXITS)
    return False


def _outcomes_after(node: cst.CSTNode, ctx: ModuleContext) -> Optional[FrozenSet[str]]:
    """How the statements after ``node`` in its block end; None when its parent is no block."""
    parent = ctx.parent(node)
    if not isinstance(parent, cst.IndentedBlock):
        return None
    members = statements(parent)
    for index, member in enumerate(members):
        if member is node:
            return outcomes(members[index + 1 :])
    return None


def _after_handler(block: cst.CSTNode, ctx: ModuleContext) -> FrozenSet[str]:
    """How the statements after the ``try`` end, when ``block`` is one of its handlers' bodies
    and the ``try`` has no ``finally``; {FALL} otherwise."""
    handler = ctx.parent(block)
    attempt = ctx.parent(handler) if isinstance(handler, cst.ExceptHandler) else None
    if not isinstance(attempt, cst.Try) or attempt.finalbody is not None:
        return frozenset({FALL})
    after = _outcomes_after(attempt, ctx)
    return after if after is not None else frozenset({FALL})


def body_exits(node: cst.If) -> bool:
    """Is the loop left when the test holds? (No: ``if tries <= 3: continue`` then ``raise``,
    or ``if ok: … else: raise``: the test is then the condition to go round again.)"""
    body, _ = if_branches(node)
    return body is not None and bool(outcomes(body) & EXITS)


def status_outcomes(stmts: Sequence[cst.CSTNode], status: int, ctx: ModuleContext,
                    more_attempts: bool = False) -> FrozenSet[str]:
    """Like :func:`outcomes`, but every status test is decided for ``status``. With
    ``more_attempts``, a test of the attempt count alone (``if attempt < max_retries:``) is
    decided for an attempt that is not the last: the way a status goes while attempts remain."""
    current = {FALL}
    for statement in stmts:
        if FALL not in current:
            break
        current.discard(FALL)
        current |= _status_statement(statement, status, ctx, more_attempts)
    return frozenset(current)


def _attempts_remain(node: cst.If) -> Optional[Sequence[cst.CSTNode]]:
    """``if attempt < max_retries: … continue`` (no else): the branch an attempt that is not the
    last takes, when the test reads only counts (``attempt``, ``self.max_retries``)."""
    from .same_operation import bookkeeping  # imports this module

    names = [dotted_name(n) for n in walk(node.test) if isinstance(n, (cst.Name, cst.Attribute))]
    names = [n for n in names if n and n not in ("self", "cls")]
    if not names or not all(bookkeeping(n) for n in names) or node.orelse is not None:
        return None
    if not isinstance(node.test, cst.Comparison) or len(node.test.comparisons) != 1:
        return None
    operator = node.test.comparisons[0].operator
    if not isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
        return None
    body, _ = if_branches(node)
    return body if CONTINUE in outcomes(body) else None


def status_branch(node: cst.If, status: int, ctx: ModuleContext) -> Optional[Sequence[cst.CSTNode]]:
    """The statements a response with ``status`` runs at this ``if`` (an empty list for a
    missing ``else``), when its test surely decides; None when it may go either way."""
    tested = status_range(node.test, ctx)
    if tested is None or status not in tested[0] and status in tested[1]:
        return None
    body, orelse = if_branches(node)
    return body if status in tested[0] else (orelse or [])


def _status_statement(node: cst.CSTNode, status: int, ctx: ModuleContext, more: bool = False) -> FrozenSet[str]:
    if isinstance(node, cst.If):
        branch = status_branch(node, status, ctx)
        if branch is None and more:
            branch = _attempts_remain(node)
        if branch is not None:
            return status_outcomes(branch, status, ctx, more)
        body, orelse = if_branches(node)
        result = set(status_outcomes(body, status, ctx, more))
        result |= status_outcomes(orelse, status, ctx, more) if orelse is not None else {FALL}
        return frozenset(result)
    if isinstance(node, cst.Expr):
        value = unwrap_await(node.value)
        if isinstance(value, cst.Call) and last_name(value.func) == "raise_for_status" and status >= 400:
            return frozenset({RAISE})
        if isinstance(value, cst.Call) and status >= 400 and _raises_for(value, status, ctx):
            return frozenset({RAISE})
    if isinstance(node, cst.Try):
        body = status_outcomes(statements(node.body), status, ctx, more)
        result = set(body - {FALL})
        if FALL in body:
            result |= status_outcomes(statements(node.orelse), status, ctx, more) if node.orelse else {FALL}
        if RAISE in body:
            raised = _builtin_raises(node)
            for handler in node.handlers:
                if raised is not None and not _catches_any(handler, raised, ctx):
                    continue  # ``raise ValueError(msg)`` for a 4xx is no RequestException: it leaves
                result |= outcomes(statements(handler.body))
        return frozenset(result)
    if isinstance(node, cst.With):
        return status_outcomes(statements(node.body), status, ctx, more)
    return statement_outcomes(node)


def _builtin_raises(try_node: cst.Try) -> Optional[List[type]]:
    """The built-in exception classes the try's body raises (``raise ValueError(msg)``), when
    every raise in it names one and it calls no ``raise_for_status()``; None otherwise."""
    found: List[type] = []
    for node in walk(try_node.body, skip=DEFERRED):
        if isinstance(node, cst.Call) and last_name(node.func) == "raise_for_status":
            return None
        if not isinstance(node, cst.Raise):
            continue
        exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
        cls = getattr(builtins, exc.value, None) if isinstance(exc, cst.Name) else None
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            return None
        found.append(cls)
    return found or None


def _catches_any(handler: cst.ExceptHandler, raised: List[type], ctx: ModuleContext) -> bool:
    """Can the handler catch one of these built-in exceptions? Only a built-in base can (a
    library's class is never a base of ``ValueError``); a bare ``except`` catches all."""
    if handler.type is None:
        return True
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for element in types:
        expr = element.value if isinstance(element, cst.Element) else element
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return True  # a tuple in a name, a call: we cannot tell
        last = last_name(expr) or ""
        # ``socket.error``, ``asyncio.TimeoutError``, ``from socket import timeout``: built-ins by other names
        cls = _BUILTIN_ALIASES.get(last, getattr(builtins, last, None))
        if isinstance(expr, cst.Name) and getattr(builtins, last, None) is None:
            bindings = ctx.bindings(expr)
            if not bindings or any(b.kind != "import" for b in bindings):
                return True  # a local alias (``errors = (ValueError, KeyError)``): may hold a built-in
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            continue  # a library's class
        if any(issubclass(r, cls) for r in raised):
            return True
    return False


_BUILTIN_ALIASES = {"error": OSError, "timeout": TimeoutError}


def _raises_for(call: cst.Call, status: int, ctx: ModuleContext) -> bool:
    """A helper raises for this failed status: ``self._raise_for_status(response, ...)`` of a base
    class in another module (mailersend), a function that calls ``raise_for_status()``, or one that
    raises its own error for a 4xx."""
    key = ctx.helper_key(call)
    if key in ctx.summaries:
        kind = ctx.summaries.status_raise_kind(key)
    else:
        callee = ctx.program_callee(call)
        raised = ctx.program.status_raiser(*callee) if callee is not None else None
        kind = raised[0] if raised is not None else None
    return kind == "http" or kind == "own" and status < 500

"""Skip what cannot hold a retry site before libcst sees it.

libcst parses about ten times slower than the standard library's ``ast``, and its scope
and qualified-name metadata cost ten to twenty times the parse. Most files, and most
functions in the rest, cannot hold a retry site, so the engine:

1. checks the raw bytes for the words any site needs (:func:`active_triggers`);
2. parses with ``ast`` (the syntax check every file gets anyway) and finds the lines where
   a site can start: calls and decorators named like a library's API, and loops and
   self-calling functions that pass an exact structural check on the ``ast``;
3. if there are none, the file is done; otherwise the definitions (functions, classes and
   their members) that hold none of those lines, and the module-level statements that
   bind nothing the kept code reads, are replaced by a placeholder of the same height
   (:func:`narrow_source`), so line and column numbers are unchanged and imports and
   module constants stay resolvable; libcst parses that.

Every step keeps more than the extractors need, never less; a test compares the findings
with and without narrowing over a large corpus and requires them to be identical.
"""

from __future__ import annotations

import ast
import bisect
import io
import itertools
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

#: Statements that define a name and run their body later: narrowing replaces them whole.
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Words:
    """A file gate: does the raw text contain one of these words? (``bytes.find`` is a
    hundred times faster than a regular expression with alternatives.)"""

    def __init__(self, *words: str, ignore_case: bool = False, word_end: bool = False) -> None:
        encoded = {w.lower().encode() if ignore_case else w.encode() for w in words}
        if not word_end:
            # A word that contains another (``aioboto3``, ``boto3``) adds nothing but a scan.
            encoded = {w for w in encoded if not any(o != w and o in w for o in encoded)}
        self.words = tuple(sorted(encoded))
        self.ignore_case = ignore_case
        #: The word must not go on with a letter: ``redis``, ``aioredis``, ``redis_url``,
        #: never the ``redis`` of ``redistribute``.
        self.word_end = word_end

    @property
    def key(self) -> tuple:
        """Equal for gates that search the same: triggers often build their gate alike."""
        return (self.words, self.ignore_case, self.word_end)

    def search(self, data: bytes, lowered: "Optional[Callable[[], bytes]]" = None) -> bool:
        if self.ignore_case:
            data = lowered() if lowered is not None else data.lower()
        if not self.word_end:
            return any(word in data for word in self.words)
        return any(_ends_word(data, word) for word in self.words)

    def __repr__(self) -> str:
        return f"Words({', '.join(w.decode() for w in self.words)})"


_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _ends_word(data: bytes, word: bytes) -> bool:
    at = data.find(word)
    while at >= 0:
        end = at + len(word)
        if end >= len(data) or data[end] not in _LETTERS:
            return True
        at = data.find(word, at + 1)
    return False


class AllOf:
    """A file gate that needs each of its gates (a broker's method *and* its package)."""

    def __init__(self, *gates: Words) -> None:
        self.gates = gates

    @property
    def key(self) -> tuple:
        return tuple(gate.key for gate in self.gates)

    def search(self, data: bytes, lowered: "Optional[Callable[[], bytes]]" = None) -> bool:
        return all(gate.search(data, lowered) for gate in self.gates)


@dataclass(frozen=True)
class Trigger:
    """Where one extractor's sites can be, from cheapest to most precise.

    ``text``: the raw file must contain one of its words, or it has no site of this kind.
    ``calls``/``decorators``: a call (or bare decorator) whose callee's last name is one of
    these may be a site; with ``partial`` the word may be part of the name (``_sleep_for``),
    in any case. ``statements``: statement types where a site may start; ``confirm`` is asked
    about each (an exact check on the ``ast``). ``context``: what the trigger finds only
    helps to read a site elsewhere (a ``self.queue`` assignment): it keeps its definition,
    but never makes a file worth parsing; with ``called``, only when kept code calls that
    definition by name (a helper that sleeps).

    All of it must be conservative: a site the extractor would find always matches.
    """

    text: "Words | AllOf"
    calls: FrozenSet[str] = frozenset()
    decorators: FrozenSet[str] = frozenset()
    partial: bool = False
    statements: Tuple[type, ...] = ()
    confirm: Optional[Callable[[ast.stmt, "Source"], bool]] = None
    context: bool = False
    called: bool = False


def active_triggers(data: bytes, triggers: Sequence[Trigger]) -> List[Trigger]:
    """The triggers whose words the file has; empty when no site can exist."""
    found: Dict[tuple, bool] = {}  # triggers share gates (a site's and its context's)
    lower: List[bytes] = []

    def lowered() -> bytes:  # one lower-case copy of the file for every case-blind gate
        if not lower:
            lower.append(data.lower())
        return lower[0]

    def search(gate: "Words | AllOf") -> bool:
        key = gate.key
        if key not in found:
            found[key] = gate.search(data, lowered)
        return found[key]

    active = [t for t in triggers if not t.context and search(t.text)]
    if not active:
        return []
    return active + [t for t in triggers if t.context and search(t.text)]


# ---------------------------------------------------------------- the source


_ALIAS = re.compile(r"as[ \t]+(\w+)")  # a literal first: the scan skips to each "as"


def _assignment(name: str, numbers: bool) -> "re.Pattern[str]":
    """``NAME = …``, ``NAME: T = …``; with ``numbers``: ``NAME = (1, 2, 4)``, ``NAME: tuple = 1,
    2, 4``, ``NAME = self.x = [1, 2]``, ``NAME = BASE`` (a name: ``delays._literal_numbers``
    follows it). The name comes first in the pattern (no look-behind), so the scan jumps
    from one occurrence of it to the next."""
    pattern = rf"{re.escape(name)}[ \t]*(?::[^=\n]*)?=(?!=)"
    if numbers:
        pattern += (
            r"[ \t]*(?:[\w.\[\]\"']+[ \t]*=(?!=)[ \t]*)*"
            # a comment runs to its line's end: ``##`` cannot be split two ways (no backtracking blow-up)
            r"(?:[\[(](?:\s|#[^\n]*(?=\n|\Z)|\()*[-+]?\.?\d|[-+]?\.?\d|[A-Za-z_]\w*[ \t]*(?:[#;\r\n]|$))"
        )
    return re.compile(pattern)


_OTHER_LINE_ENDS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class Source:
    """A file's text, its lines as ``ast`` and libcst count them, and its ``ast``."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.tree = tree
        # Only \n, \r\n and \r end a line for the parsers; str.splitlines also splits on
        # form feeds and other separators (it is the faster one where there are none).
        if _OTHER_LINE_ENDS.search(text):
            self.lines: List[str] = io.StringIO(text, newline="").readlines()
        else:
            self.lines = text.splitlines(keepends=True)
        self.starts: List[int] = [0, *itertools.accumulate(map(len, self.lines))]
        self._aliases: Optional[FrozenSet[str]] = None
        self._assigned: Dict[Tuple[str, bool], bool] = {}
        self._statements: Optional[List[ast.stmt]] = None

    @property
    def statements(self) -> List[ast.stmt]:
        if self._statements is None:
            self._statements = list(all_statements(self.tree))
        return self._statements

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def span(self, node: ast.stmt) -> Tuple[int, int]:
        """Offsets of the statement's lines in the text (for ``str.find``/``count`` without a copy)."""
        return self.starts[first_line(node) - 1], self.starts[node.end_lineno or node.lineno]

    def has(self, node: ast.stmt, *words: str) -> bool:
        start, end = self.span(node)
        return any(self.text.find(word, start, end) >= 0 for word in words)

    @property
    def aliases(self) -> FrozenSet[str]:
        """Names bound by ``as`` (``from time import sleep as nap``): any of them may be a builtin."""
        if self._aliases is None:
            text = self.text
            self._aliases = frozenset(m.group(1) for m in _ALIAS.finditer(text) if starts_name(text, m.start()))
        return self._aliases

    def assigns(self, name: str, numbers: bool = False) -> bool:
        """Is ``name`` assigned somewhere (as a name; ``numbers``: numbers, a list or tuple of
        them, or another name)? Without ``numbers`` an attribute (``self.name = …``) counts too."""
        key = (name, numbers)
        known = self._assigned.get(key)
        if known is None:
            text = self.text
            known = self._assigned[key] = any(
                starts_name(text, m.start(), after_dot=not numbers) for m in _assignment(name, numbers).finditer(text)
            )
        return known


def starts_name(text: str, at: int, after_dot: bool = True) -> bool:
    """Does a name start at ``at``: not inside a longer one, nor after a ``.`` unless ``after_dot``?"""
    if at == 0:
        return True
    before = text[at - 1]
    return not (before.isalnum() or before == "_" or before == "." and not after_dot)


def first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators]) if decorators else node.lineno


#: Statements that hold other statements (the rest never do: no need to look).
_COMPOUND = frozenset(
    getattr(ast, name) for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar", "Match",
                                    "FunctionDef", "AsyncFunctionDef", "ClassDef")
    if hasattr(ast, name)
)


def all_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, without visiting expressions (cheap)."""
    stack: List[ast.stmt] = list(reversed(tree.body))
    while stack:
        statement = stack.pop()
        yield statement
        if type(statement) in _COMPOUND:
            inner: List[ast.stmt] = []
            for body in bodies(statement):
                inner.extend(body)
            stack.extend(reversed(inner))


def local_nodes(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Walk ``nodes`` without entering nested functions, classes and lambdas."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST) and not isinstance(v, _DEFERRED))
            elif isinstance(value, ast.AST) and not isinstance(value, _DEFERRED):
                stack.append(value)


def last_name(expr: ast.AST) -> Optional[str]:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


# ---------------------------------------------------------------- narrowing


_LONE_CR = re.compile(r"\r(?!\n)")
_IDENTIFIER = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _call_lines(source: Source, text: str, words: FrozenSet[str], partial: bool) -> Iterator[Tuple[str, int]]:
    """Words and the lines where ``word(`` is written (``partial``: a name containing the word)."""
    for word in words:
        size = len(word)
        at = text.find(word)
        while at >= 0:
            end = at + size
            if partial:
                while end < len(text) and text[end] in _IDENTIFIER:
                    end += 1
            if (partial or at == 0 or text[at - 1] not in _IDENTIFIER) and (end >= len(text) or text[end] not in _IDENTIFIER):
                rest = text[end : end + 80].lstrip()
                if rest.startswith("("):
                    yield word, source.line_of(at)
            at = text.find(word, at + size)


def _calls_at(source: Source, line: int, word: str) -> bool:
    """Does code call something whose name ends in ``word``, written on ``line``?

    Walks only the statements around the line, each without its nested statements."""

    def around(body: Sequence[ast.stmt]) -> List[ast.stmt]:
        return [s for s in body if first_line(s) <= line <= (s.end_lineno or s.lineno)]

    statements = around(source.tree.body)
    while statements:
        statement = statements.pop()
        stack: List[ast.AST] = [statement]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call) and last_name(node.func) == word and node.func.end_lineno == line:
                return True
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    stack.extend(v for v in value if isinstance(v, ast.AST) and not isinstance(v, ast.stmt))
                elif isinstance(value, ast.AST):
                    stack.append(value)
        for block in bodies(statement):
            statements.extend(around(block))
    return False


def _decorator_lines(source: Source, words: FrozenSet[str]) -> Iterator[int]:
    text = source.text
    for word in words:
        at = text.find(word)
        while at >= 0:
            line = source.line_of(at)
            if text[source.starts[line - 1] : at].lstrip(" \t\f").startswith("@"):
                yield line
            at = text.find(word, at + len(word))


@dataclass
class _Lines:
    primary: Set[int] = field(default_factory=set)
    context: Set[int] = field(default_factory=set)
    #: context needed only where kept code calls the definition around it
    helpers: Set[int] = field(default_factory=set)

    def bucket(self, trigger: Trigger) -> Set[int]:
        return self.helpers if trigger.called else self.context if trigger.context else self.primary


def site_lines(source: Source, active: Sequence[Trigger]) -> _Lines:
    """Lines where a site (primary) or what helps to read one (context) may start."""
    found = _Lines()
    lowered: Optional[str] = None
    by_type: Dict[type, List[Trigger]] = {}
    calls, derived_lines = _derived_calls(source, active)
    found.context.update(derived_lines)
    for trigger, words in zip(active, calls):
        into = found.bucket(trigger)
        if words:
            if trigger.partial:
                lowered = source.text.lower() if lowered is None else lowered
                into.update(line for _, line in _call_lines(source, lowered, frozenset(w.lower() for w in words), True))
            else:
                # ``delay(`` in a docstring is no call: the ``ast`` says which lines call one.
                into.update(
                    line for word, line in _call_lines(source, source.text, words, False) if _calls_at(source, line, word)
                )
        if trigger.decorators:
            into.update(_decorator_lines(source, trigger.decorators))
        for kind in trigger.statements:
            by_type.setdefault(kind, []).append(trigger)
    if by_type:
        for statement in source.statements:
            for trigger in by_type.get(type(statement), ()):
                into = found.bucket(trigger)
                if statement.lineno not in into and (trigger.confirm is None or trigger.confirm(statement, source)):
                    into.add(statement.lineno)
    return found


def _derived_calls(source: Source, active: Sequence[Trigger]) -> Tuple[List[FrozenSet[str]], Set[int]]:
    """Each trigger's call words plus the local classes derived from one of them
    (``class LoggingRetry(Retry)``: building one is a site too), and the lines of those
    classes (kept: they tell what ``LoggingRetry(…)`` builds)."""
    out = [t.calls for t in active]
    lines: Set[int] = set()
    if not any(out):
        return out, lines
    if " as " in source.text:
        # ``from requests.adapters import HTTPAdapter as RequestsHTTPAdapter``: the alias is the word
        renamed: Dict[str, Set[str]] = {}
        for statement in source.statements:
            if isinstance(statement, ast.ImportFrom):
                for alias in statement.names:
                    if alias.asname is not None:
                        renamed.setdefault(alias.name, set()).add(alias.asname)
        if renamed:
            out = [frozenset(words | {a for w in words for a in renamed.get(w, ())})
                   if words and not active[i].partial else words for i, words in enumerate(out)]
    if "class" not in source.text:
        return out, lines
    headers = []
    for statement in source.statements:
        if isinstance(statement, ast.ClassDef) and statement.bases:
            bases = {last_name(b) for b in statement.bases} - {None}
            headers.append((statement.name, bases, statement.lineno))
    if not headers:
        return out, lines
    for index, words in enumerate(out):
        if not words or active[index].partial:
            continue
        derived = set(words)
        changed = True
        while changed:
            changed = False
            for name, bases, line in headers:
                if name not in derived and bases & derived:
                    derived.add(name)
                    lines.add(line)
                    changed = True
        out[index] = frozenset(derived)
    return out, lines


_CALLED = re.compile(r"(\w+)\s*\(")


def narrow_source(source: Source, active: Sequence[Trigger]) -> Optional[str]:
    """The text libcst needs: None when nothing can hold a site."""
    lines = site_lines(source, active)
    if not lines.primary:
        return None
    if _LONE_CR.search(source.text):
        return source.text  # old Mac line ends: the line-based patterns cannot be trusted
    keep = lines.primary | lines.context
    factories = _factories(source, lines.primary)
    if factories:
        # ``@retry_pattern(backoff.expo, …)``: a use of a factory is where its policy is judged.
        keep |= {line for word, line in _call_lines(source, source.text, factories, False) if _calls_at(source, line, word)}
    text = _kept(source, keep)
    if lines.helpers:
        # Helpers count only where kept code calls them by name (``self._backoff()``).
        called = set(_CALLED.findall(text))
        extra = {line for line in lines.helpers if _definition_name(source.tree, line) in called}
        if extra:
            text = _kept(source, keep | extra)
    return text


def _factories(source: Source, primary: Set[int]) -> FrozenSet[str]:
    """Module-level functions whose ``return`` statement holds a site (a policy built from the
    function's parameters: :func:`.extract.libraries.built.factory_of`)."""
    names = set()
    for statement in source.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(statement):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) \
                        and any(line in primary for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                    names.add(statement.name)
                    break
    return frozenset(names)


def _definition_name(tree: ast.Module, line: int) -> Optional[str]:
    """The function, or method of a class, around ``line`` (as ``find_sleepers`` reads them)."""
    for statement in tree.body:
        if isinstance(statement, DEFINITIONS) and first_line(statement) <= line <= (statement.end_lineno or 0):
            if isinstance(statement, ast.ClassDef):
                for member in statement.body:
                    if isinstance(member, DEFINITIONS) and first_line(member) <= line <= (member.end_lineno or 0):
                        return member.name
                return None
            return statement.name
    return None


_IDENTIFIERS = re.compile(r"[A-Za-z_]\w*")


def _kept(source: Source, lines: Set[int]) -> str:
    """The text with every definition that holds none of ``lines`` blanked, and the
    module-level statements nothing kept can read (a docstring, ``main()``, a table that
    no kept code names)."""
    keep = sorted(lines)
    out = list(source.lines)
    changed = False

    def holds(node: ast.stmt) -> bool:
        start, end = first_line(node), node.end_lineno or node.lineno
        index = bisect.bisect_left(keep, start)
        return index < len(keep) and keep[index] <= end

    blanked: Set[int] = set()
    blocks: List[Sequence[ast.stmt]] = [source.tree.body]

    def visit(body: Sequence[ast.stmt]) -> None:
        nonlocal changed
        for statement in body:
            if not isinstance(statement, DEFINITIONS):
                # ``if sys.platform == "win32": def …`` in a module or class body
                for inner in bodies(statement):
                    blocks.append(inner)
                    visit(inner)
            elif not holds(statement):
                _blank(source, out, statement)
                blanked.add(id(statement))
                changed = True
            elif isinstance(statement, ast.ClassDef):
                blocks.append(statement.body)
                visit(statement.body)

    visit(source.tree.body)
    # Module-level statements: blank those that bind no name the kept code reads.
    optional: List[Tuple[ast.stmt, Set[str]]] = []
    body = source.tree.body
    for index, statement in enumerate(body):
        if isinstance(statement, DEFINITIONS) or holds(statement) or not _alone(body, index):
            continue
        if index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring: ``from __future__`` imports may follow only it
        bound = _bound_names(statement, source)
        if bound is not None:
            optional.append((statement, bound))
    if optional:
        skipped = {id(s) for s, _ in optional}
        referenced = set(_IDENTIFIERS.findall("".join(
            "".join(out[first_line(s) - 1 : s.end_lineno]) for s in body if id(s) not in skipped
        )))
        pending = optional
        grew = True
        while grew:
            grew = False
            rest = []
            for statement, bound in pending:
                if bound & referenced:
                    referenced.update(_IDENTIFIERS.findall(source.text, *source.span(statement)))
                    grew = True
                else:
                    rest.append((statement, bound))
            pending = rest
        for statement, _ in pending:
            _blank(source, out, statement)
            blanked.add(id(statement))
            changed = True
    # Neighbours blanked alike become one placeholder: the blank and comment lines between
    # them would each be a node for libcst (a test module: thousands).
    for block in blocks:
        run: List[ast.stmt] = []
        for statement in list(block) + [None]:  # type: ignore[list-item]
            if statement is not None and id(statement) in blanked:
                run.append(statement)
                continue
            if len(run) > 1:
                _blank(source, out, run[0], run[-1])
            run = []
    return "".join(out) if changed else source.text


def bodies(statement: ast.stmt, handlers: bool = True) -> Iterator[Sequence[ast.stmt]]:
    """The statement lists nested directly in a statement (a definition's body too)."""
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if value and isinstance(value, list) and isinstance(value[0], ast.stmt):
            yield value
    if handlers:
        for handler in getattr(statement, "handlers", None) or ():
            yield handler.body
    for case in getattr(statement, "cases", None) or ():
        yield case.body


def _alone(body: Sequence[ast.stmt], index: int) -> bool:
    """The statement has its lines to itself (not ``a = 1; b = 2``)."""
    statement = body[index]
    if index > 0 and (body[index - 1].end_lineno or 0) >= first_line(statement):
        return False
    return index + 1 >= len(body) or first_line(body[index + 1]) > (statement.end_lineno or statement.lineno)


def _bound_names(statement: ast.stmt, source: Source) -> Optional[Set[str]]:
    """The names a module-level statement binds; None when it must stay whatever the names
    (imports, ``global``, ``if __name__ == "__main__":``)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
        return None
    if source.has(statement, "__name__", "import", "__all__", "global"):
        return None
    bound: Set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            bound.update(_base_name(node.value, through_calls=False))  # ``app.conf.x = 1`` changes ``app``
        elif isinstance(node, ast.Call):
            # ``app.conf.update(…)``, ``registry.append(…)``: a call may change what a name holds.
            bound.update(_base_name(node.func, through_calls=True))
    return bound


def _base_name(expr: ast.AST, through_calls: bool) -> Tuple[str, ...]:
    """``app`` of ``app.conf["x"]`` (and, through calls, of ``app.tasks.get(…).update``)."""
    kinds = (ast.Attribute, ast.Subscript, ast.Call) if through_calls else (ast.Attribute, ast.Subscript)
    while isinstance(expr, kinds):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return (expr.id,) if isinstance(expr, ast.Name) else ()


_INDENT = re.compile(r"[ \t\f]*")


def _blank(source: Source, out: List[str], node: ast.stmt, last: Optional[ast.stmt] = None) -> None:
    """Replace a statement (or the statements from ``node`` to ``last``, with the blank and
    comment lines between them) by one of the same height: ``pass`` for one line, else an
    empty multi-line string (one token for libcst, where blank lines would each be a node
    its metadata walks; line numbers below stay the same)."""
    start, end = first_line(node), (last or node).end_lineno or (last or node).lineno
    endings = []
    for number in range(start, end + 1):
        line = source.lines[number - 1]
        endings.append(line[len(line.rstrip("\r\n")) :])
        out[number - 1] = ""
    indent = _INDENT.match(source.lines[start - 1]).group()  # type: ignore[union-attr]
    if start == end:
        out[start - 1] = indent + "pass" + endings[0]
    else:
        out[start - 1] = indent + '"""' + "".join(endings[:-1]) + '"""' + endings[-1]

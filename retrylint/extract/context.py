"""What extractors know about one module: libcst metadata, names, positions, assignments."""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

import libcst as cst
from libcst._metadata_dependent import LazyValue
from libcst.metadata import (
    Assignment,
    CodeRange,
    MetadataWrapper,
    PositionProvider,
    ScopeProvider,
)
from libcst.metadata.scope_provider import Scope

from ..model import Location
from ..program import DEFAULT, UNREAD, ModuleFacts, Program, Value
from ..settings import Settings
from ..summaries import Summaries, key_of
from ..syntax import call_args, children, dotted_name, walk

#: :meth:`ModuleContext.literal` of an expression that writes no literal.
NO_LITERAL = object()


#: Libraries vendored inside another package (``pip._vendor.urllib3``, ``botocore.vendored.requests``).
_VENDORED = re.compile(r"^[\w.]*?\.(?:_vendor|vendored|_vendored|vendor|_vendored_packages)\.(.+)$")


@dataclass(frozen=True)
class Binding:
    """One place a name gets a value."""

    #: ``assign`` (``x = v``), ``augassign`` (``x += v``), ``annassign``, ``param``,
    #: ``for`` (loop target), ``with``, ``except``, ``import``, ``def``, ``class``, ``other``.
    kind: str
    node: cst.CSTNode  # the statement or node that binds
    value: Optional[cst.BaseExpression]  # the assigned expression where there is one
    operator: Optional[cst.BaseAugOp] = None  # for augassign


def _from_recursion(exc: BaseException) -> bool:
    seen = set()
    cause: Optional[BaseException] = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, RecursionError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


class ModuleContext:
    """libcst metadata for one module, resolved once and shared by every extractor."""

    def __init__(self, module: cst.Module, path: str, settings: Settings, sleepers: Optional[Mapping[str, Optional[cst.BaseExpression]]] = None,
                 summaries: Summaries = Summaries.EMPTY, program: Optional[Program] = None) -> None:
        self.module = module
        self.path = path
        self.settings = settings
        #: Functions and methods of the (whole, un-narrowed) module whose body waits, each with
        #: the one literal every wait of it sleeps, if there is one (:func:`.waits.find_sleepers`).
        self.sleepers = sleepers if sleepers is not None else {}
        #: What the module's own helpers do (read from the whole file before narrowing).
        self.summaries = summaries
        #: Values read away from their use (``self.delay`` set in ``__init__``, imported constants).
        self.program = program if program is not None else Program(None, path)
        #: Literal nodes standing for such values → the expression they stand for (for positions).
        self._foreign: Dict[cst.CSTNode, cst.CSTNode] = {}
        #: Every such value used, with the expression it stood for (``explain`` shows them).
        self.outside_values: List[Tuple[cst.CSTNode, Value]] = []
        #: Nodes of a delay helper's expression written in at its call: the module they come
        #: from (for their imports), the class (for ``self.x``), and parameters → the arguments.
        self._foreign_module: Dict[cst.CSTNode, ModuleFacts] = {}
        self._foreign_owner: Dict[cst.CSTNode, Optional[str]] = {}
        self._substitutions: Dict[cst.CSTNode, cst.BaseExpression] = {}
        #: Calls taking their delay from another module's delay strategy → where it is.
        self.strategy_calls: Dict[cst.CSTNode, str] = {}
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self._scopes = self._resolve(ScopeProvider)
        # Positions are a code-generation pass over the whole module: only a file with a
        # site to report (or a line to compare) pays for it.
        self._positions: Optional[Mapping[cst.CSTNode, CodeRange]] = None
        # Parent links: one pass over the dataclass fields, far cheaper than ParentNodeProvider.
        self._parents: Dict[cst.CSTNode, cst.CSTNode] = {}
        stack: List[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            for child in children(node):
                self._parents[child] = node
                stack.append(child)
        self._binding_cache: Dict[Tuple[int, str], Tuple[Binding, ...]] = {}
        self._bases: Optional[Dict[str, FrozenSet[str]]] = None

    def _resolve(self, provider):
        try:
            return self.wrapper.resolve(provider)
        except KeyError as exc:
            # libcst's PositionProvider turns a RecursionError in deeply nested code into a
            # KeyError (its cleanup looks up a position never recorded), whose message is the
            # repr of a huge node: say what happened instead.
            if _from_recursion(exc):
                raise RecursionError("the code is nested too deeply for libcst's metadata") from None
            raise

    # ------------------------------------------------------------ metadata

    def qualified_names(self, node: cst.CSTNode, inherited: bool = False) -> FrozenSet[str]:
        """Qualified names of an expression, ``builtins.`` dropped: ``time.sleep``, ``ValueError``.

        ``inherited`` adds the bases of classes defined here (for calls that build
        objects); exception names never take it: ``class Transient(Exception)`` is not
        a catch-all.
        """
        if node in self._foreign_module:
            return self._foreign_names(node)
        value = self._raw_qualified_names(node)
        if not value:
            return frozenset()
        out = set()
        for q in value:
            name = q.name
            if name.startswith("builtins."):
                name = name[len("builtins.") :]
            out.add(name)
            vendored = _VENDORED.match(name)
            if vendored:  # pip._vendor.urllib3.Retry is urllib3.Retry
                out.add(vendored.group(1))
        bases = self._inherited() if inherited else None
        if bases:
            for name in list(out):
                out.update(bases.get(name, ()))
        return frozenset(out)

    def _foreign_names(self, node: cst.CSTNode) -> FrozenSet[str]:
        """Qualified names in a helper's expression, from its module's imports."""
        name = dotted_name(node)
        if name is None:
            return frozenset()
        head, _, rest = name.partition(".")
        imported = self._foreign_module[node].imports.get(head)
        if imported is None:
            return frozenset({name})  # a builtin (``min``) or a name of that module
        module, attribute = imported
        full = ".".join(p for p in (module, attribute, rest) if p)
        return frozenset({full})

    def _raw_qualified_names(self, node: cst.CSTNode):
        """What libcst's QualifiedNameProvider gives, asked only for the nodes we ask about:
        the provider walks every node of the module to set a lazy value on each (a quarter
        of the metadata time)."""
        scope = self.scope(node)
        if not scope:
            return set()
        return scope.get_qualified_names_for(node)

    def _inherited(self) -> Dict[str, FrozenSet[str]]:
        """Classes defined in this module → the qualified names of their bases, transitively.

        ``class LoggingRetry(Retry)`` makes ``LoggingRetry(total=5)`` a ``urllib3`` Retry
        for every extractor.
        """
        if self._bases is None:
            self._bases = {}
            direct: Dict[str, Set[str]] = {}
            for node in walk(self.module, skip=()):
                if isinstance(node, cst.ClassDef) and node.bases:
                    own = self._raw_qualified_names(node)
                    bases = set()
                    for arg in node.bases:
                        bases |= self.qualified_names(arg.value)
                    for q in own or ():
                        direct.setdefault(q.name, set()).update(bases)
            for name in direct:
                seen: Set[str] = set()
                stack = list(direct[name])
                while stack:
                    base = stack.pop()
                    if base in seen:
                        continue
                    seen.add(base)
                    stack.extend(direct.get(base, ()))
                seen.discard(name)
                self._bases[name] = frozenset(seen)
        return self._bases

    def is_call_to(self, node: cst.CSTNode, names: Iterable[str]) -> bool:
        if not isinstance(node, cst.Call):
            return False
        return bool(self.qualified_names(node.func) & frozenset(names))

    def call_name(self, call: cst.Call) -> FrozenSet[str]:
        """What a call calls: ``f(x)`` → f's names; ``make()(x)`` calls an unknown result."""
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            return frozenset()
        return self.qualified_names(call.func, inherited=True)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        current = self._parents.get(node)
        while current is not None:
            yield current
            current = self._parents.get(current)

    def scope(self, node: cst.CSTNode) -> Optional[Scope]:
        value = self._scopes.get(node)
        if isinstance(value, LazyValue):
            value = value()
        return value

    def location(self, node: cst.CSTNode, end: Optional[cst.CSTNode] = None) -> Location:
        if self._positions is None:
            self._positions = self._resolve(PositionProvider)
        node = self._foreign.get(node, node)
        start = self._positions[node]
        stop = self._positions[self._foreign.get(end, end)] if end is not None else start
        return Location(start.start.line, start.start.column + 1, stop.end.line, stop.end.column + 1)

    def code(self, node: cst.CSTNode) -> str:
        text = self.module.code_for_node(node).strip()
        return " ".join(text.split())

    def enclosing_class(self, node: cst.CSTNode) -> Optional[str]:
        if node in self._foreign_owner:
            return self._foreign_owner[node]
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor.name.value
        return None

    def helper_key(self, call: cst.Call) -> Optional[str]:
        """The :mod:`retrylint.summaries` key of a call to this module's own helper."""
        func = call.func
        if isinstance(func, cst.Name):
            return key_of(func.value, None, None)
        if isinstance(func, cst.Attribute):
            return key_of(func.attr.value, dotted_name(func.value), self.enclosing_class(call))
        return None

    def enclosing_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
        return None

    # ------------------------------------------------------------ bindings

    def bindings(self, name_node: cst.CSTNode, name: Optional[str] = None) -> Tuple[Binding, ...]:
        """Every binding of a simple name as seen from ``name_node``'s scope."""
        name = name or (name_node.value if isinstance(name_node, cst.Name) else None)
        if name is None:
            return ()
        scope = self.scope(name_node)
        if scope is None:
            return ()
        key = (id(scope), name)
        cached = self._binding_cache.get(key)
        if cached is not None:
            return cached
        result = tuple(self._binding(a) for a in scope[name])
        self._binding_cache[key] = result
        return result

    def _binding(self, assignment: object) -> Binding:
        if not isinstance(assignment, Assignment):
            return Binding("import", getattr(assignment, "node", cst.Pass()), None)
        node = assignment.node
        if isinstance(node, cst.Param):
            return Binding("param", node, node.default)
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return Binding("import", node, None)
        if isinstance(node, cst.FunctionDef):
            return Binding("def", node, None)
        if isinstance(node, cst.ClassDef):
            return Binding("class", node, None)
        parent = self.parent(node)
        if isinstance(parent, cst.AssignTarget):
            statement = self.parent(parent)
            if isinstance(statement, cst.Assign):
                return Binding("assign", statement, statement.value)
        if isinstance(parent, cst.AugAssign):
            return Binding("augassign", parent, parent.value, parent.operator)
        if isinstance(parent, cst.AnnAssign):
            return Binding("annassign", parent, parent.value)
        if isinstance(parent, (cst.For, cst.CompFor)):
            return Binding("for", parent, None)
        if isinstance(parent, cst.AsName):
            owner = self.parent(parent)
            if isinstance(owner, cst.WithItem):
                return Binding("with", owner, owner.item)
            if isinstance(owner, (cst.ExceptHandler, cst.ExceptStarHandler)):
                return Binding("except", owner, None)
        if isinstance(parent, cst.NamedExpr):
            return Binding("assign", parent, parent.value)
        return Binding("other", node, None)

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement (small or compound) that holds ``node``."""
        current: cst.CSTNode = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.IndentedBlock, cst.Module)):
                return current
            current = ancestor
        return current

    def is_inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return any(a is container for a in self.ancestors(node))

    def module_constant(self, name: str, use: Optional[cst.CSTNode] = None) -> Optional[cst.BaseExpression]:
        """The value of ``NAME = value`` at module level, if assigned exactly once; else a
        constant imported from another module of the checked tree (``use``: the expression
        asking, for positions and ``explain``)."""
        values: List[cst.BaseExpression] = []
        for statement in self.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name) and target.target.value == name:
                                values.append(small.value)
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        if isinstance(small.target, cst.Name) and small.target.value == name:
                            values.append(small.value)
        if len(values) == 1:
            return values[0]
        if values:
            return None
        if use is not None and use in self._foreign_module:
            return None  # a name in a helper's expression: its module's constants are written in
        found = self.program.name_value(name)
        return self._stand_in(found, use) if found is not None and found.path != self.path else None

    def note_stand_in(self, node: cst.CSTNode, use: cst.CSTNode) -> None:
        """A parsed literal standing for something at ``use`` (for its position)."""
        for current in [node, *walk(node, skip=())]:
            self._foreign[current] = use

    def home(self, node: cst.CSTNode) -> cst.CSTNode:
        """The node of this module that a written-in node stands for (itself otherwise)."""
        seen = 0
        while node in self._foreign and seen < 8:
            node, seen = self._foreign[node], seen + 1
        return node

    def substitution(self, name: cst.CSTNode) -> Optional[cst.BaseExpression]:
        """The argument a call passed for a helper's parameter."""
        return self._substitutions.get(name)

    @contextlib.contextmanager
    def substituted(self, arguments: Dict[cst.CSTNode, cst.BaseExpression]) -> Iterator[None]:
        """Read parameter names as the arguments one call passed, for the ``with`` body only."""
        self._substitutions.update(arguments)
        try:
            yield
        finally:
            for name in arguments:
                self._substitutions.pop(name, None)

    def write_in_strategy(self, key: str, helper, counter: str) -> Optional[cst.BaseExpression]:
        """A delay strategy's expression, to judge on its own (:mod:`.strategies`): its other
        parameters take their literal defaults; ``counter`` stays the retry number."""
        try:
            node = cst.parse_expression(helper.returns)
        except Exception:  # noqa: BLE001
            return None
        defaults = dict(helper.defaults)
        owner = key.split(".")[0] if "." in key else None
        facts = self.program.own()
        stack: List[cst.CSTNode] = [node]
        while stack:
            current = stack.pop()
            self._foreign_module[current] = facts
            self._foreign_owner[current] = owner
            if isinstance(current, cst.Name) and current.value != counter and current.value in defaults:
                try:
                    self._substitutions[current] = cst.parse_expression(repr(defaults[current.value]))
                except Exception:  # noqa: BLE001
                    pass
            stack.extend(children(current))
        return node

    def callee(self, call: cst.Call) -> Optional[Tuple[str, Optional[str]]]:
        """(name, receiver) of a call of a function or method the program view may know:
        ``helper(x)`` → ("helper", None), ``self._backoff(n)`` → ("_backoff", "self"); None for a
        local or parameter holding some callable, or a callee that is no dotted name."""
        func = call.func
        if isinstance(func, cst.Name):
            if any(b.kind not in ("def", "import") for b in self.bindings(func)):
                return None
            return func.value, None
        if isinstance(func, cst.Attribute):
            receiver = dotted_name(func.value)
            return (func.attr.value, receiver) if receiver is not None else None
        return None

    def program_callee(self, call: cst.Call) -> Optional[Tuple[str, Optional[str], Optional[str]]]:
        """:meth:`callee` with the class a ``self.m(…)``/``cls.m(…)`` call looks its method up in
        (the enclosing one; None for any other receiver): what the program view is asked with."""
        callee = self.callee(call)
        if callee is None:
            return None
        name, receiver = callee
        return name, receiver, self.enclosing_class(call) if receiver in ("self", "cls") else None

    def helper_delay(self, call: cst.Call, want: str) -> Optional[cst.BaseExpression]:
        """The delay a call's helper ``returns`` or ``sleeps``, written in terms of the call's
        arguments (``self._backoff(attempt)`` → ``min(60, 0.5 * 2 ** attempt)``); None when
        the helper is not one expression of its parameters."""
        callee = self.program_callee(call)
        if callee is None:
            return None
        name, receiver, owner = callee
        found = self.program.helper(name, receiver, owner)
        if found is None and receiver == "self" and owner is not None:
            # ``self._backoff_fn = backoff_fn or self.backoff`` in ``__init__``: the method it holds
            method = self.program.method_held(owner, name)
            found = self.program.helper(method, receiver, owner) if method is not None else None
        if found is None:
            return None
        helper, facts = found
        text = helper.returns if want == "returns" else helper.sleeps
        if text is None or any(arg.star for arg in call.args):
            return None
        positional, keywords = call_args(call)
        if len(positional) > len(helper.params) or any(k not in helper.params for k in keywords):
            return None
        arguments: Dict[str, cst.BaseExpression] = dict(zip(helper.params, positional))
        arguments.update(keywords)
        defaults = dict(helper.defaults)
        for param in helper.params:
            if param not in arguments:
                if param not in defaults:
                    return None
                try:
                    arguments[param] = cst.parse_expression(repr(defaults[param]))
                except Exception:  # noqa: BLE001
                    return None
        node = self._written_in(text, call, facts, owner if facts is self.program.own() else None, arguments)
        if node is None:
            return None
        for argument in arguments.values():
            if argument not in self._parents and argument not in self._foreign:
                self._foreign[argument] = call  # a default written in
        if want == "returns" and facts is not self.program.own():
            # A strategy of another module: judged there (:mod:`.strategies`), not again here.
            self.strategy_calls[call] = f"{facts.path}:{helper.line}"
        what = f"{name}() {'returns' if want == 'returns' else 'sleeps'} `{text}`"
        self.outside_values.append((call, Value(text, what, facts.path, helper.line, shown=what)))
        return node

    def _written_in(self, text: str, use: cst.CSTNode, facts: ModuleFacts, owner: Optional[str],
                    arguments: Optional[Dict[str, cst.BaseExpression]] = None) -> Optional[cst.BaseExpression]:
        """An expression from elsewhere in the program, parsed and made to stand at ``use``: its
        names are read with ``facts``' imports (and ``owner``'s ``self.x``), its parameters
        replaced by ``arguments``. None when libcst cannot read it (simply unknown)."""
        try:
            node = cst.parse_expression(text)
        except Exception:  # noqa: BLE001
            return None
        stack: List[cst.CSTNode] = [node]
        while stack:
            current = stack.pop()
            self._foreign[current] = use
            self._foreign_module[current] = facts
            self._foreign_owner[current] = owner
            if arguments and isinstance(current, cst.Name) and current.value in arguments:
                self._substitutions[current] = arguments[current.value]
            stack.extend(children(current))
        return node

    def written_at(self, text: str, use: cst.CSTNode, facts: ModuleFacts,
                   arguments: Optional[Dict[str, cst.BaseExpression]] = None) -> Optional[cst.BaseExpression]:
        """Another module's expression (a factory's returned call) standing at ``use``, its names
        read with that module's imports and its parameters as ``arguments``."""
        return self._written_in(text, use, facts, None, arguments)

    def foreign_expression(self, name: str, use: cst.CSTNode) -> Optional[Tuple[cst.BaseExpression, str]]:
        """A dict or call that ``name`` (imported) is bound to in another module of the checked
        tree, written in at ``use`` (its names read with that module's imports), and ``path:line``."""
        if use in self._foreign_module:
            return None
        found = self.program.expression(name)
        if found is None:
            return None
        text, facts, line = found
        node = self._written_in(text, use, facts, None)
        if node is None:
            return None
        shown = f"built in another module as `{text if len(text) <= 80 else text[:77] + '...'}`"
        self.outside_values.append((use, Value(text, name, facts.path, line, shown=shown)))
        return node, f"{facts.path}:{line}"

    def parameter_values(self, param: cst.Param) -> Optional[List[object]]:
        """What this module's callers give a parameter (:meth:`Program.arguments_for`): one entry
        per call, ``DEFAULT`` for a call that leaves it out. None when nothing here calls the
        function (a public API's callers are elsewhere: unknown)."""
        key = self._parameter_key(param)
        return self.program.arguments_for(*key) if key is not None else None

    def note_default_used(self, param: cst.Param, use: cst.CSTNode, value: object) -> None:
        """``explain``: the value a parameter has because a caller here leaves it out."""
        key = self._parameter_key(param)
        lines = self.program.default_callers(*key) if key is not None else []
        if lines:
            origin = f"default of `{key[0]}({key[1]}=...)`, as called without it"  # type: ignore[index]
            self.outside_values.append((use, Value(value, origin, self.path, lines[0])))

    def parameter_unset(self, param: cst.Param) -> bool:
        """No caller anywhere in the package can be passing this parameter: none in this
        module, and no call of the function in another module of the package passes it (by
        keyword, at its position, or through ``*args``/``**kwargs``)."""
        key = self._parameter_key(param)
        if key is None or self.parameter_values(param) is not None:
            return False
        return not self.program.passed_elsewhere(key[0], key[1], key[2])

    def parameter_unset_elsewhere(self, param: cst.Param) -> bool:
        """No call of the function in another module of the package passes this parameter."""
        key = self._parameter_key(param)
        return key is not None and not self.program.passed_elsewhere(key[0], key[1], key[2])

    def parameter_left_out(self, param: cst.Param) -> bool:
        """No caller anywhere in the package passes this parameter: no call of the function here
        does, or every call here leaves it out, and no call in another module passes it."""
        if self.parameter_unset(param):
            return True
        values = self.parameter_values(param)
        return bool(values) and all(v is DEFAULT for v in values) and self.parameter_unset_elsewhere(param)

    def parameter_as_shipped(self, param: cst.Param) -> bool:
        """The parameter holds its default wherever the package calls the function: no call here
        or elsewhere passes it, or every call here passes the default's own value or leaves it
        out (also by handing on a parameter of its own with that default, which nobody passes),
        and no call in another module passes it."""
        if self.parameter_unset(param):
            return True
        key = self._parameter_key(param)
        values = self.parameter_values(param)
        default = self.literal(param.default)
        if key is None or not values or default is NO_LITERAL:
            return False
        if any(v is not DEFAULT and (v is UNREAD or v != default or type(v) is not type(default)) for v in values):
            return False
        return not self.program.passed_elsewhere(key[0], key[1], key[2])

    def literal(self, expr: Optional[cst.BaseExpression]) -> object:
        """The Python value a literal expression writes (``1``, ``0.5``, ``None``, ``(1, 2)``);
        :data:`NO_LITERAL` for anything else."""
        if expr is None:
            return NO_LITERAL
        try:
            return ast.literal_eval(self.code(expr))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return NO_LITERAL

    def _parameter_key(self, param: cst.Param) -> Optional[Tuple[str, str, Optional[int], bool, Optional[str]]]:
        """(function, parameter, position a caller writes it at or None, is a method) for
        :meth:`Program.arguments_for`; None for ``self``, ``*args``/``**kwargs``, a lambda's."""
        function = self.parent(self.parent(param))  # Param -> Parameters -> FunctionDef
        if not isinstance(function, cst.FunctionDef):
            return None
        params = function.params
        positional = list(params.posonly_params) + list(params.params)
        owner = self.enclosing_class(function)
        method = owner is not None
        index: Optional[int] = None
        if any(p is param for p in positional):
            index = next(i for i, p in enumerate(positional) if p is param)
            if method and positional[0].name.value in ("self", "cls"):
                if index == 0:
                    return None
                index -= 1  # ``obj.method(a)``: the caller does not write ``self``
        elif not any(p is param for p in params.kwonly_params):
            return None  # ``*args``/``**kwargs``
        if function.name.value == "__init__" and owner is not None and method:
            # ``Adapter(max_retries=n)`` is what calls ``Adapter.__init__``
            return owner, param.name.value, index, False, None
        return function.name.value, param.name.value, index, method, owner

    def outside_value(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """``self.x``/``cls.x``/``Class.x``/``module.X``/``settings.X`` when the program view
        knows its only value: a literal node standing for it; else None."""
        if isinstance(expr, cst.Subscript):
            return self._keyed_value(expr)
        if not isinstance(expr, cst.Attribute):
            return None
        receiver = dotted_name(expr.value)
        if receiver is None:
            return None
        on_self = receiver in ("self", "cls") or receiver.startswith("self.")
        owner = self.enclosing_class(expr) if on_self else None
        if not on_self and self._bound_locally(expr, receiver.split(".")[0]):
            return None
        found = self.program.attribute_value(receiver, expr.attr.value, owner)
        return self._stand_in(found, expr) if found is not None else None

    def _keyed_value(self, expr: cst.Subscript) -> Optional[cst.BaseExpression]:
        """``self._client_args["max_retries"]`` where ``__init__`` built the dict with that key."""
        if not isinstance(expr.value, cst.Attribute) or dotted_name(expr.value.value) != "self" or len(expr.slice) != 1:
            return None
        index = expr.slice[0].slice
        key = index.value if isinstance(index, cst.Index) else None
        if not isinstance(key, cst.SimpleString):
            return None
        owner = self.enclosing_class(expr)
        found = self.program.attribute_value("self", f"{expr.value.attr.value}[{key.evaluated_value!r}]", owner)
        return self._stand_in(found, expr) if found is not None else None

    def off_default(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """``self.retries`` holding a default that switches the retry off, which no caller
        anywhere changes (:meth:`Program.attribute_default`): a literal node for it, else None."""
        receiver = dotted_name(expr.value) if isinstance(expr, cst.Attribute) else None
        if receiver is None or not (receiver in ("self", "cls") or receiver.startswith("self.") and receiver.count(".") == 1):
            return None  # ``self.retries``, or a settings object's ``self.config.max_retries``
        found = self.program.attribute_default(receiver, expr.attr.value, self.enclosing_class(expr))
        return self._stand_in(found, expr) if found is not None else None

    def _bound_locally(self, expr: cst.CSTNode, head: str) -> bool:
        """``config.X`` where ``config`` is a local variable or parameter, not the module."""
        return any(b.kind not in ("import", "class") and not self._module_level(b.node)
                   for b in self.bindings(expr, head))

    def _module_level(self, node: cst.CSTNode) -> bool:
        return not any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for a in self.ancestors(node))

    def _stand_in(self, found: Value, use: Optional[cst.CSTNode]) -> Optional[cst.BaseExpression]:
        try:
            node = cst.parse_expression(found.text)
        except Exception:  # noqa: BLE001 - a value libcst cannot write back is simply unknown
            return None
        if use is not None:
            self._foreign[node] = use
            self.outside_values.append((use, found))
        return node

    def writes_in(self, container: cst.CSTNode) -> Dict[str, List[Binding]]:
        """Names and attributes (``self.delay``) assigned inside ``container`` (own frame only)."""
        out: Dict[str, List[Binding]] = {}
        for node in walk(container):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    for name in _target_names(target.target):
                        out.setdefault(name, []).append(Binding("assign", node, node.value))
            elif isinstance(node, cst.AugAssign):
                name = dotted_name(node.target)
                if name:
                    out.setdefault(name, []).append(Binding("augassign", node, node.value, node.operator))
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                name = dotted_name(node.target)
                if name:
                    out.setdefault(name, []).append(Binding("annassign", node, node.value))
            elif isinstance(node, cst.NamedExpr):
                name = dotted_name(node.target)
                if name:
                    out.setdefault(name, []).append(Binding("assign", node, node.value))
            elif isinstance(node, (cst.For,)) and node is not container:
                for name in _target_names(node.target):
                    out.setdefault(name, []).append(Binding("for", node, None))
        return out


def _target_names(target: cst.BaseExpression) -> Set[str]:
    name = dotted_name(target)
    if name:
        return {name}
    names: Set[str] = set()
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            names |= _target_names(element.value)
    return names

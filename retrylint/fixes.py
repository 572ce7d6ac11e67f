"""Fixes: text edits computed from libcst nodes, applied to the original source.

A fix is *safe* when it keeps the program's intent and needs no number the code
does not already have (``wait_exponential(...)`` → ``wait_random_exponential(...)``
with the same arguments); *unsafe* when it needs a number we choose (a cap, an
attempt limit) or changes the average delay. ``--fix`` applies safe fixes,
``--unsafe-fixes`` adds the others. Narrowing keeps line numbers and columns,
so node positions are positions in the original text.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, List, Optional, Tuple

import libcst as cst

from .extract.context import ModuleContext
from .fix_model import SAFE, UNSAFE, Edit, Fix, apply, newline_of, replace_content  # noqa: F401 - re-exported
from .fix_model import LINE_LENGTH, _line_length_in, line_length_for  # noqa: F401 - re-exported
from .model import Location
from .syntax import call_args, dotted_name


class FixUnavailable(Exception):
    """No fix can be written safely here (the rule then offers none)."""


class Fixer:
    """Builds edits for one module; given to the rules' ``fix`` methods."""

    def __init__(self, ctx: ModuleContext) -> None:
        self.ctx = ctx
        self._line_length: Optional[int] = None

    @property
    def line_length(self) -> int:
        """The line length ruff format keeps to for this file (read on first use)."""
        if self._line_length is None:
            self._line_length = line_length_for(self.ctx.path)
        return self._line_length

    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        """``node``'s text replaced by ``content``. An argument's value that takes its call's
        line past the line length splits the call as ruff format would
        (``time.sleep(random.uniform(0, delay))``)."""
        where: Location = self.ctx.location(node)
        edit = Edit(where.line, where.column, where.end_line, where.end_column, content)
        if "\n" in content or where.line != where.end_line:
            return edit
        parent = self.ctx.parent(node)
        call = self.ctx.parent(parent) if isinstance(parent, cst.Arg) and parent.value is node else None
        if not isinstance(call, cst.Call):
            return edit
        old = self.render(node).strip()
        whole = self.ctx.location(call)
        if whole.line != whole.end_line:
            return self._refit_argument(parent, node, content) or edit
        texts = []
        for arg, text in zip(call.args, self._arg_texts(call)):
            if arg is parent:
                if not text.endswith(old):
                    return edit
                text = text[: len(text) - len(old)] + content
            texts.append(text)
        reflowed = self._reflowed(call, self.render(call.func).strip(), texts)
        return reflowed if reflowed is not None else edit

    def render(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)

    # ------------------------------------------------------------ calls

    def keyword(self, call: cst.Call, name: str) -> Optional[cst.Arg]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    # Edits are made in place, in the text: whitespace, comments and the call's layout stay as
    # they are (rendering a changed node again would lose the block's indentation inside a
    # multi-line call, and move comments with commas).

    def _lines(self) -> List[str]:
        lines = getattr(self, "_text_lines", None)
        if lines is None:
            # The (narrowed) module keeps every kept line where it was: its text around a site
            # is the file's text.
            lines = self._text_lines = self.ctx.module.code.splitlines()
        return lines

    def _line(self, number: int) -> str:
        lines = self._lines()
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def _starts_line(self, where: Location) -> bool:
        return not self._line(where.line)[: where.column - 1].strip()

    def _indent(self, where: Location) -> str:
        return self._line(where.line)[: where.column - 1]

    def _alone_on_lines(self, where: Location) -> bool:
        """Only whitespace before it on its first line; only a comma and a comment after it."""
        after = self._line(where.end_line)[where.end_column - 1:]
        return self._starts_line(where) and _REST_OF_ITEM.match(after) is not None

    def add_keyword(self, call: cst.Call, name: str, value: str) -> Edit:
        """``f(a)`` → ``f(a, name=value)``; one argument per line gets a line like the others."""
        text = f"{name}={value}"
        args = list(call.args)
        whole = self.ctx.location(call)
        if not args:
            return Edit(whole.end_line, whole.end_column - 1, whole.end_line, whole.end_column - 1, text)
        last = args[-1]
        where = self.ctx.location(last)
        if isinstance(last.comma, cst.Comma) and self._alone_on_lines(where) and whole.end_line > where.end_line:
            line = where.end_line + 1
            return Edit(line, 1, line, 1, f"{self._indent(where)}{text},\n")
        if whole.line == whole.end_line:
            reflowed = self._reflowed(call, self.render(call.func).strip(), self._arg_texts(call) + [text])
            if reflowed is not None:
                return reflowed
        return Edit(where.end_line, where.end_column, where.end_line, where.end_column, f", {text}")

    # ------------------------------------------------------------ line length

    def _arg_texts(self, call: cst.Call) -> List[str]:
        return [
            self.render(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace(""))).strip()
            for arg in call.args
        ]

    def _reflowed(self, call: cst.Call, func: str, args: List[str]) -> Optional[Edit]:
        """When the one-line call ``func(args)`` would make its line, which fitted, longer than
        ruff format's line length (88 columns, or the project's ``line-length``), the call split
        as ruff format splits it (:meth:`_split_call`), the outermost call of a nested one first.
        None when the call fits on its line (or is not on one line, or holds a comment)."""
        whole = self.ctx.location(call)
        if whole.line != whole.end_line or any("#" in a or "\n" in a for a in args):
            return None
        line = self._line(whole.line)
        before, after = line[: whole.column - 1], line[whole.end_column - 1:]
        single = f"{func}({', '.join(args)})"
        limit = self.line_length
        if len(line) > limit or len(before) + len(single) + len(after) <= limit:
            return None  # it fits; or the line was long already (the file is not ruff-formatted)
        indent = line[: len(line) - len(line.lstrip())]
        # ruff format splits the outermost brackets first: ``f(g(a, b))`` becomes
        # ``f(\n    g(a, b)\n)`` when ``g(a, b)`` then fits on its own line.
        top = call
        for ancestor in self.ctx.ancestors(call):
            if isinstance(ancestor, cst.Call):
                top = ancestor
            elif not isinstance(ancestor, (cst.Arg, cst.Attribute, cst.Subscript, cst.SubscriptElement, cst.Index)):
                break
        if top is not call:
            outer = self.ctx.location(top)
            if outer.line == outer.end_line:
                outer_func = self.render(top.func).strip()
                old_call = self.render(call).strip()
                texts: List[str] = []
                for arg, text in zip(top.args, self._arg_texts(top)):
                    if self.ctx.is_inside(call, arg):
                        if old_call not in text:
                            texts = []
                            break
                        text = text.replace(old_call, single, 1)
                    texts.append(text)
                if texts and not any("#" in t or "\n" in t for t in texts):
                    return Edit(outer.line, outer.column, outer.end_line, outer.end_column,
                                self._split_call(outer_func, texts, indent, limit))
        return Edit(whole.line, whole.column, whole.end_line, whole.end_column, self._split_call(func, args, indent, limit))

    def _refit_argument(self, arg: cst.Arg, value: cst.CSTNode, content: str) -> Optional[Edit]:
        """In a call already split one argument per line: the argument whose new value takes
        its line past the line length, split in turn as ruff format splits it. None when it
        fits (or is not alone on its line)."""
        where = self.ctx.location(arg)
        if where.line != where.end_line or not self._alone_on_lines(where):
            return None
        line = self._line(where.line)
        value_at = self.ctx.location(value)
        new_line = line[: value_at.column - 1] + content + line[value_at.end_column - 1:]
        limit = self.line_length
        rest = line[where.end_column - 1:].strip()
        if len(line) > limit or len(new_line) <= limit or rest not in ("", ","):
            return None
        text = line[where.column - 1: value_at.column - 1] + content
        fitted = self._fit(text, self._indent(where), rest, limit)
        if fitted == text:
            return None
        return Edit(where.line, where.column, where.end_line, where.end_column, fitted)

    def _split_call(self, func: str, args: List[str], indent: str, limit: int) -> str:
        """``func(args)`` split as ruff format (black) splits a call that does not fit: the
        arguments on one line of their own; else one argument, itself split the same way if it
        is too long; else one per line, each split in turn, with a trailing comma."""
        inner = indent + "    "
        joined = ", ".join(args)
        if len(inner) + len(joined) <= limit:
            return f"{func}(\n{inner}{joined}\n{indent})"
        if len(args) == 1:
            return f"{func}(\n{inner}{self._fit(args[0], inner, '', limit)}\n{indent})"
        return f"{func}(\n" + "".join(f"{inner}{self._fit(a, inner, ',', limit)},\n" for a in args) + f"{indent})"

    def _fit(self, text: str, indent: str, trailing: str, limit: int) -> str:
        """An argument's text on a line of its own at ``indent``: as it is when it fits, else
        (a call, possibly after ``name=``) split as :meth:`_split_call` splits it."""
        if len(indent) + len(text) + len(trailing) <= limit:
            return text
        match = re.match(r"(\*\*?|[A-Za-z_][A-Za-z0-9_]*=)?(.*)\Z", text, re.S)
        prefix, value = (match.group(1) or "", match.group(2)) if match else ("", text)
        try:
            expression = cst.parse_expression(value)
        except Exception:  # noqa: BLE001 - not an expression we can split: as it is
            return text
        if "#" in value:
            return text
        empty = cst.Module([])
        if isinstance(expression, cst.BinaryOperation) and not expression.lpar:
            # ``a * b`` inside brackets: one operand per line, each line but the first led by
            # the operator (``self.backoff_factor\n* 2**i``), at the operator's level only.
            level = _PRECEDENCE.get(type(expression.operator))
            operands: List[str] = []
            node: cst.BaseExpression = expression
            while isinstance(node, cst.BinaryOperation) and not node.lpar and _PRECEDENCE.get(type(node.operator)) == level:
                operands.insert(0, f"{empty.code_for_node(node.operator).strip()} {empty.code_for_node(node.right).strip()}")
                node = node.left
            operands.insert(0, empty.code_for_node(node).strip())
            if level is None or len(operands) < 2:
                return text
            return prefix + f"\n{indent}".join(operands)
        if not isinstance(expression, cst.Call) or not expression.args:
            return text
        func = empty.code_for_node(expression.func).strip()
        args = [empty.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT,
                                                   whitespace_after_arg=cst.SimpleWhitespace(""))).strip()
                for a in expression.args]
        return prefix + self._split_call(func, args, indent, limit)

    def remove_keyword(self, call: cst.Call, name: str) -> Optional[Edit]:
        args = list(call.args)
        index = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == name), None)
        if index is None:
            return None
        return self._remove_item([self.ctx.location(a) for a in args], index)

    def _remove_item(self, items: List[Location], index: int) -> Edit:
        """Remove one item of a comma-separated list (arguments, imported names) from the text."""
        where = items[index]
        if self._alone_on_lines(where) and len(items) > 1:
            # Comment lines right above it, at its indentation, are about it: they go too
            # (``# jitter off for the tests`` above ``jitter=None,``), unless an item precedes
            # them on the same line range (never: items start lines here).
            start = where.line
            indent = self._indent(where)
            previous_end = items[index - 1].end_line if index > 0 else 0
            while start - 1 > previous_end:
                above = self._line(start - 1)
                if not above.strip().startswith("#") or not above.startswith(indent) \
                        or above[len(indent):len(indent) + 1] in (" ", "\t"):
                    break
                start -= 1
            return Edit(start, 1, where.end_line + 1, 1, "")
        if index + 1 < len(items):
            following = items[index + 1]
            return Edit(where.line, where.column, following.line, following.column, "")
        if index > 0:
            previous = items[index - 1]
            return Edit(previous.end_line, previous.end_column, where.end_line, where.end_column, "")
        after = self._line(where.end_line)[where.end_column - 1:]
        comma = len(after) - len(after.lstrip(" \t")) + 1 if after.lstrip(" \t").startswith(",") else 0
        return Edit(where.line, where.column, where.end_line, where.end_column + comma, "")

    def set_keyword(self, call: cst.Call, name: str, value: str) -> Edit:
        arg = self.keyword(call, name)
        if arg is None:
            return self.add_keyword(call, name, value)
        return self.replace(arg.value, value)

    # ------------------------------------------------------------ names and imports

    def rename_callee(self, call: cst.Call, new_name: str, module: str) -> Optional[List[Edit]]:
        """Call ``module.new_name`` instead, importing it next to the old name when needed.

        ``tenacity.wait_exponential(...)`` → ``tenacity.wait_random_exponential(...)``;
        ``wait_exponential(...)`` imported ``from tenacity import wait_exponential`` →
        ``wait_random_exponential(...)`` and the import extended. None when the name is
        aliased or imported in a way we do not rewrite.
        """
        func = call.func
        if isinstance(func, cst.Attribute):
            renamed = f"{self.render(func.value).strip()}.{new_name}"
            reflowed = self._reflowed(call, renamed, self._arg_texts(call))
            return [reflowed if reflowed is not None else self.replace(func.attr, new_name)]
        if not isinstance(func, cst.Name):
            return None
        reflowed = self._reflowed(call, new_name, self._arg_texts(call))
        edits = [reflowed if reflowed is not None else self.replace(func, new_name)]
        import_edit = self.import_name(func, module, new_name, leaving=func.value if self._used_once(func.value) else None)
        if import_edit is False:
            return None
        if isinstance(import_edit, Edit):
            edits.append(import_edit)
        return edits

    def _used_once(self, name: str) -> bool:
        """Whether the whole file reads ``name`` once (the call being renamed): its import then
        goes once the fix is applied (:mod:`retrylint.fix_imports`)."""
        tree = self._whole_tree()
        if tree is None:
            return False
        reads = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == name
                    and isinstance(node.ctx, ast.Load))
        return reads == 1 and name not in {c.value for c in ast.walk(tree) if isinstance(c, ast.Constant)}

    def import_name(self, beside: cst.Name, module: str, new_name: str, leaving: Optional[str] = None):
        """Make ``new_name`` importable where ``beside`` is imported from ``module``: the name is
        added to that ``from module import …`` where isort/ruff would put it (sorted, when the
        list is sorted; on a line of its own, indented like the others, in a one-per-line list).

        Returns an Edit, None when nothing is needed, False when it cannot be done safely.
        """
        existing = [b for b in self.ctx.bindings(beside, new_name) if b.kind == "import"]
        if existing:
            return None
        for binding in self.ctx.bindings(beside):
            node = binding.node
            if isinstance(node, cst.ImportFrom) and node.module is not None:
                if not (dotted_name(node.module) or "").startswith(module):
                    return False
                if isinstance(node.names, cst.ImportStar):
                    return None
                names = list(node.names)
                for alias in names:
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if alias.asname is not None and isinstance(local, cst.Name) and local.value == beside.value:
                        return False  # ``wait_exponential as expo``: leave aliases alone
                single = self._single_line_import(dotted_name(node.module) or "", new_name)
                if single is not None:
                    return single
                return self._insert_name(names, new_name, leaving)
        return False

    def _single_line_import(self, module: str, new_name: str) -> Optional[Edit]:
        """isort's force-single-line style (``from tenacity import retry`` /
        ``from tenacity import stop_after_attempt``, one name a line, two or more): the new name
        gets a line of its own, sorted among them, instead of joining one of them."""
        tree = self._whole_tree()
        if tree is None:
            return None
        same = [s for s in tree.body if isinstance(s, ast.ImportFrom) and s.level == 0 and s.module == module]
        if len(same) < 2 or any(len(s.names) != 1 or s.names[0].asname is not None or s.names[0].name == "*"
                                or s.end_lineno != s.lineno for s in same):
            return None
        indent = " " * same[0].col_offset
        text = f"{indent}from {module} import {new_name}\n"
        keys = [member_key(s.names[0].name) for s in same]
        if keys == sorted(keys):
            for statement, key in zip(same, keys):
                if key > member_key(new_name):
                    return Edit(statement.lineno, 1, statement.lineno, 1, text)
        line = same[-1].lineno + 1
        return Edit(line, 1, line, 1, text)

    def _insert_name(self, names: List[cst.ImportAlias], new_name: str, leaving: Optional[str] = None) -> Edit:
        keys = [member_key(dotted_name(a.name) or "") for a in names]
        position = len(names)
        if keys == sorted(keys):
            position = next((i for i, key in enumerate(keys) if key > member_key(new_name)), len(names))
        split = self._split_import(names, position, new_name, leaving)
        if split is not None:
            return split
        if position < len(names):
            where = self.ctx.location(names[position])
            if self._starts_line(where):
                text = f"{new_name},\n{self._indent(where)}"
            else:
                text = f"{new_name}, "
            return Edit(where.line, where.column, where.line, where.column, text)
        last = names[-1]
        where = self.ctx.location(last)
        if isinstance(last.comma, cst.Comma) and self._alone_on_lines(where):
            line = where.end_line + 1
            return Edit(line, 1, line, 1, f"{self._indent(where)}{new_name},\n")
        return Edit(where.end_line, where.end_column, where.end_line, where.end_column, f", {new_name}")

    def _split_import(self, names: List[cst.ImportAlias], position: int, new_name: str,
                      leaving: Optional[str] = None) -> Optional[Edit]:
        """``from m import a, b, c`` on one line that the new name would take past the line
        length: the names one per line in parentheses, with a trailing comma, as isort/ruff
        write it (I001) and ruff format keeps it. None when it fits, or is not such a line.
        ``leaving``: a name of the list that the fix leaves unused (removed afterwards)."""
        first, last = self.ctx.location(names[0]), self.ctx.location(names[-1])
        if first.line != last.end_line:
            return None
        line = self._line(first.line)
        before, after = line[: first.column - 1], line[last.end_column - 1:]
        length = len(line) + len(", " + new_name)
        if leaving is not None and any(dotted_name(a.name) == leaving and a.asname is None for a in names):
            length -= len(", " + leaving)
        if "(" in before or after.strip() or len(line) > self.line_length or length <= self.line_length:
            return None  # parenthesised, a comment or code after it, long already, or it fits
        texts = [self.render(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for a in names]
        texts.insert(position, new_name)
        indent = before[: len(before) - len(before.lstrip())]
        body = "".join(f"{indent}    {text},\n" for text in texts)
        return Edit(first.line, first.column, last.end_line, last.end_column, f"(\n{body}{indent})")

    def module_alias(self, near: cst.CSTNode, module: str) -> Optional[str]:
        """The local name of ``import module`` (``tenacity`` or ``t`` for ``import tenacity as t``).

        Raises FixUnavailable when that name (or, without the import, the module's own name) is
        something else where ``near`` is: a parameter or a local ``random`` is not the module."""
        alias = None
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Import):
                        for imported in small.names:
                            if dotted_name(imported.name) == module and alias is None:
                                if imported.asname is not None and isinstance(imported.asname.name, cst.Name):
                                    alias = imported.asname.name.value
                                else:
                                    alias = module
        name = alias or module.split(".")[0]
        if _rebound_in_module(getattr(self.ctx.program, "_tree", None), name, module):
            # ``random = ...``, ``def random()``, ``class random``, ``from x import random`` at
            # module level (narrowing may have blanked it out of ``self.ctx.module``): the
            # name is not (only) the module everywhere; no fix rather than a wrong one.
            raise FixUnavailable(f"`{name}` is bound to something other than the {module} module in this module")
        if near is not self.ctx.module:
            for binding in self.ctx.bindings(near, name):
                if not (binding.kind == "import" and isinstance(binding.node, cst.Import)
                        and any(dotted_name(i.name) == module for i in binding.node.names)):
                    raise FixUnavailable(f"`{name}` is not the {module} module here")
        return alias

    def _whole_tree(self) -> Optional[ast.Module]:
        """The whole file's ``ast`` (narrowing blanks statements of ``self.ctx.module``: an unused
        import, a class that holds no retry); None when there is none."""
        tree = getattr(self.ctx.program, "_tree", None)
        return tree if isinstance(tree, ast.Module) else None

    def _top_statements(self) -> List[Tuple[str, str, int, int]]:
        """The module's top-level statements as (kind, module, first line, last line): kind is
        ``import``, ``from``, ``relative``, ``docstring``, ``def`` (a def or class, decorators
        included) or ``other``. From the whole file when its ``ast`` is at hand."""
        out: List[Tuple[str, str, int, int]] = []
        tree = self._whole_tree()
        if tree is not None:
            for index, node in enumerate(tree.body):
                first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
                last = node.end_lineno or node.lineno
                if out and first <= out[-1][3]:
                    out.append(("other", "", first, last))  # ``import a; x = 1``: not a line of its own
                elif isinstance(node, ast.Import) and len(node.names) >= 1:
                    out.append(("import", node.names[0].name, first, last))
                elif isinstance(node, ast.ImportFrom):
                    out.append(("from", node.module or "", first, last) if node.level == 0 and node.module
                               else ("relative", "", first, last))
                elif index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                        and isinstance(node.value.value, str):
                    out.append(("docstring", "", first, last))
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.append(("def", "", first, last))
                else:
                    out.append(("other", "", first, last))
            return out
        for index, statement in enumerate(self.ctx.module.body):
            where = self.ctx.location(statement)
            first, last = where.line, where.end_line
            decorators = getattr(statement, "decorators", ())
            if decorators:
                first = min(first, self.ctx.location(decorators[0]).line)
            kind, name = "other", ""
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                small = statement.body[0]
                if isinstance(small, cst.Import):
                    kind, name = "import", dotted_name(small.names[0].name) or ""
                elif isinstance(small, cst.ImportFrom) and small.relative == () and small.module is not None:
                    kind, name = "from", dotted_name(small.module) or ""
                elif isinstance(small, cst.ImportFrom):
                    kind = "relative"
                elif index == 0 and _is_docstring(small):
                    kind = "docstring"
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                kind = "def"
            out.append((kind, name, first, last))
        return out

    def ensure_module_import(self, module: str) -> Optional[Edit]:
        """``import module`` unless present, where isort/ruff would put it: among the other
        ``import x`` lines of its section (standard library or not), sorted; a section of its
        own (a blank line apart) when there is none; after the docstring in a file without
        imports, else at the top (after a shebang and a header comment), two blank lines before
        a ``def``/``class`` as ruff format and isort leave them."""
        if self.module_alias(self.ctx.module, module) == module:
            return None
        block: List[Tuple[int, int, str, int, str]] = []  # first line, last line, section, kind, key
        docstring = None
        statements = self._top_statements()
        for kind, name, first, last in statements:
            if kind == "import":
                block.append((first, last, _section(name), 0, name.lower()))
                continue
            if kind == "from":
                block.append((first, last, _section(name), 1, name.lower()))
                continue
            if kind == "relative":
                block.append((first, last, "local", 1, ""))
                continue
            if kind == "docstring" and not block and docstring is None:
                docstring = last
                continue
            break
        text = f"import {module}\n"
        section, key = _section(module), (0, module.lower())
        order = list(_SECTIONS)
        same = [entry for entry in block if entry[2] == section]
        by_name = [(name,) for _, _, _, _, name in same]
        by_kind = [(kind, name) for _, _, _, kind, name in same]
        if by_kind != sorted(by_kind) and by_name == sorted(by_name):
            # isort's force-sort-within-sections (``from collections.abc import …`` before
            # ``import logging``): by module name alone.
            order_key, keyed = (module.lower(),), by_name
        else:
            order_key, keyed = key, by_kind
        for (first, _, _, _, _), entry_key in zip(same, keyed):
            if entry_key > order_key:
                return Edit(first, 1, first, 1, text)
        if same:
            line = same[-1][1] + 1
            return Edit(line, 1, line, 1, text)
        later = [entry for entry in block if order.index(entry[2]) > order.index(section)]
        if later:
            line = later[0][0]
            return Edit(line, 1, line, 1, text + "\n")
        if block:
            line = block[-1][1] + 1
            return Edit(line, 1, line, 1, "\n" + text)
        if docstring is not None:
            line = docstring + 1
            return Edit(line, 1, line, 1, "\n" + text)
        following = next((kind for kind, _, _, _ in statements), "other")
        line = self._after_header()
        return Edit(line, 1, line, 1, text + ("\n\n" if following == "def" else "\n"))

    def _after_header(self) -> int:
        """The line where a first import goes in a file without one: after a shebang or coding
        line, and after a header comment that a blank line separates from the code (a comment
        right above the first statement stays with it)."""
        lines = self._lines()
        position = 1
        index = 0
        while index < len(lines) and index < 2 and (lines[index].startswith("#!") or _CODING.match(lines[index])):
            index += 1
            position = index + 1
        while index < len(lines) and (not lines[index].strip() or lines[index].lstrip().startswith("#")):
            if not lines[index].strip():
                position = index + 2  # after this blank line
            index += 1
        return position


#: A PEP 263 coding line.
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-_.a-zA-Z0-9]+")


def _rebound_in_module(tree: Optional[ast.Module], name: str, module: str) -> bool:
    """Whether the whole file (``tree``: its ``ast``, un-narrowed) binds ``name`` at module level
    to anything but ``import module`` (as ``name``): an assignment, a ``def``/``class``, a
    ``for``/``with``/``except`` target, another import, or a ``global name`` that a function
    assigns."""
    if tree is None:
        return False

    def imports_the_module(node: ast.AST) -> bool:
        return isinstance(node, ast.Import) and all(
            a.name == module for a in node.names if (a.asname or a.name.split(".")[0]) == name)

    def module_level(body) -> Iterable[ast.AST]:
        for statement in body:
            yield statement
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list):
                    yield from module_level(inner)

    for statement in module_level([tree]):
        if isinstance(statement, ast.Module):
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name == name:
                return True
            # ``global random`` then ``random = ...`` inside a function
            for node in ast.walk(statement):
                if isinstance(node, ast.Global) and name in node.names:
                    return True
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name and not imports_the_module(statement):
                    return True
            continue
        if isinstance(statement, ast.ExceptHandler):
            if statement.name == name:
                return True
            continue
        # targets of assignments, for, with, walrus, match captures… in the statement itself
        # (not in the nested blocks, visited on their own; comprehensions bind their own scope)
        for node in _own_nodes(statement):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
                return True
            if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
                return True
            if isinstance(node, ast.MatchMapping) and node.rest == name:
                return True
    return False


def _own_nodes(statement: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a statement outside its nested statement blocks and comprehensions."""
    stack = [statement]
    while stack:
        node = stack.pop()
        yield node
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "finalbody", "handlers") and isinstance(value, list) \
                    and value and isinstance(value[0], (ast.stmt, ast.ExceptHandler)):
                continue
            if isinstance(node, ast.match_case) and field == "body":
                continue
            if isinstance(node, ast.Match) and field == "cases":
                stack.extend(c.pattern for c in value)  # captures bind at module level
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and not isinstance(
                        child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
                    stack.append(child)


#: Binary operators by precedence level (a split happens at one level only).
_PRECEDENCE = {
    cst.Power: 7,
    cst.Multiply: 6, cst.Divide: 6, cst.FloorDivide: 6, cst.Modulo: 6, cst.MatrixMultiply: 6,
    cst.Add: 5, cst.Subtract: 5,
    cst.LeftShift: 4, cst.RightShift: 4,
    cst.BitAnd: 3, cst.BitXor: 2, cst.BitOr: 1,
}

#: isort's sections, in order (first-party cannot be told from third-party without the project).
_SECTIONS = ("future", "stdlib", "thirdparty", "local")

#: What may follow an item of a list on its last line: a comma, a comment.
_REST_OF_ITEM = re.compile(r"\s*,?\s*(#.*)?$")


def _section(module: str) -> str:
    import sys

    top = module.split(".")[0]
    if top == "__future__":
        return "future"
    if top in getattr(sys, "stdlib_module_names", ()):
        return "stdlib"
    return "thirdparty"


def member_key(name: str) -> Tuple[int, str, str]:
    """isort/ruff's order of imported names (order-by-type): CONSTANTS, Classes, functions,
    each case-insensitively."""
    if len(name) > 1 and name.isupper():
        rank = 0
    elif name[:1].isupper():
        rank = 1
    else:
        rank = 2
    return (rank, name.lower(), name)


def _is_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.Expr) and isinstance(statement.value, (cst.SimpleString, cst.ConcatenatedString))


def only_literal_args(call: cst.Call) -> bool:
    positional, keywords = call_args(call)
    return not any(a.star for a in call.args)


def first_call(node: Optional[cst.CSTNode], ctx: ModuleContext, names: Iterable[str]) -> Optional[cst.Call]:
    """The first call in ``node`` to one of ``names`` (qualified)."""
    from .syntax import walk

    if node is None:
        return None
    wanted = frozenset(names)
    for child in walk(node):
        if isinstance(child, cst.Call) and ctx.call_name(child) & wanted:
            return child
    return None

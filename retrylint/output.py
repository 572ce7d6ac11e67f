"""Output formats for findings: text (ruff's), JSON (ruff's fields), SARIF 2.1.0, GitHub annotations."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence
from urllib.parse import quote

from . import __version__
from .codes import NAMES

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Finding

FORMATS = ("text", "json", "sarif", "github")


def _marker(finding: Finding, unsafe: bool) -> str:
    if finding.fix is not None and (finding.fix.safety == "safe" or unsafe):
        return "[*] "
    return ""


def text(findings: Sequence[Finding], unsafe: bool = False) -> str:
    return "".join(
        f"{f.path}:{f.location.line}:{f.location.column}: {f.code} {_marker(f, unsafe)}{f.message}\n" for f in findings
    )


def summary(findings: Sequence[Finding], unsafe: bool = False, fixed: int = 0, unanalysed: int = 0,
            failed: int = 0) -> str:
    """ruff's summary. ``unanalysed``: files that could not be analysed (over the budget per file,
    …), ``failed``: files that failed; a run with either never says "All checks passed!"."""
    lines = []
    if fixed:
        lines.append(f"Fixed {fixed} error{'s' if fixed != 1 else ''}.")
    unchecked = _unchecked(unanalysed, failed)
    if not findings:
        if unchecked:
            lines.append(f"No errors {'remain' if fixed else 'found'} in the files checked, but {unchecked}.")
        else:
            lines.append("All checks passed!" if not fixed else "No errors remain.")
        return "\n".join(lines) + "\n"
    n = len(findings)
    lines.append(f"Found {n} error{'s' if n != 1 else ''}{' remaining' if fixed else ''}.")
    if unchecked:
        lines.append(unchecked[0].upper() + unchecked[1:] + ".")
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safety == "safe")
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.safety == "unsafe")
    if safe or (unsafe and hidden):
        lines.append(f"[*] {safe + (hidden if unsafe else 0)} fixable with the `--fix` option.")
    if hidden and not unsafe:
        lines.append(f"({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option.)")
    return "\n".join(lines) + "\n"


def _unchecked(unanalysed: int, failed: int) -> str:
    parts = []
    if unanalysed:
        parts.append(f"{unanalysed} file{'s' if unanalysed != 1 else ''} could not be analysed")
    if failed:
        parts.append(f"{failed} failed (the errors below)")
    return " and ".join(parts)


def _fix_json(finding: Finding):
    if finding.fix is None:
        return None
    return {
        "applicability": finding.fix.safety,
        "message": finding.fix.message,
        "edits": [
            {
                "content": e.content,
                "location": {"column": e.column, "row": e.line},
                "end_location": {"column": e.end_column, "row": e.end_line},
            }
            for e in finding.fix.edits
        ],
    }


def statistics(findings: Sequence[Finding], fmt: str = "text", unsafe: bool = False) -> str:
    """One entry per rule, most frequent first: a text table, or ruff's JSON statistics. As in
    ruff, a rule counts as fixable by the fixes this run would apply (``--unsafe-fixes`` adds
    the unsafe ones): ``fixable``/``fixable_count`` in JSON, ``[*]``/``[ ]`` in text when any is."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings
                      if f.fix is not None and (f.fix.safety == "safe" or unsafe))
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if fmt == "json":
        items = [
            {"code": code, "name": NAMES.get(code, ""), "count": count,
             "fixable": fixable[code] > 0, "fixable_count": fixable[code]}
            for code, count in ordered
        ]
        return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
    width = max((len(str(c)) for c in counts.values()), default=1)
    marks = bool(fixable)
    lines = []
    for code, count in ordered:
        mark = ("[*] " if fixable[code] else "[ ] ") if marks else ""
        lines.append(f"{count:>{width}}\t{code}\t{mark}{NAMES.get(code, '')}")
    return "\n".join(lines) + ("\n" if lines else "")


def severity(code: str) -> str:
    """``error`` for a file that could not be read or parsed (RTY001), ``warning`` otherwise."""
    return "error" if code == "RTY001" else "warning"


def _absolute(path: str) -> str:
    if path == "-":
        return path
    return str(Path(path).absolute())


def to_json(findings: Sequence[Finding]) -> str:
    items = [
        {
            "cell": None,
            "code": f.code,
            "end_location": {"column": f.location.end_column, "row": f.location.end_line},
            "filename": _absolute(f.path),
            "fix": _fix_json(f),
            "location": {"column": f.location.column, "row": f.location.line},
            "message": f.message,
            "name": f.name,
            "noqa_row": f.location.line,
            "severity": severity(f.code),
            "url": f.url,
        }
        for f in findings
    ]
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"


def source_root(start: Optional[Path] = None) -> Path:
    """The repository root above ``start`` (a folder with ``.git``), else ``start`` itself:
    what SARIF URIs are relative to (``%SRCROOT%``), as code scanning expects."""
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return here


def _location_uri(path: str, root: Path) -> Dict[str, str]:
    """An artifactLocation: relative to ``%SRCROOT%`` when under it, else an absolute file URI
    (never a ``../`` path, which GitHub cannot place)."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": "%SRCROOT%"}


class _Lines:
    """Source lines by path, read once each, for fingerprints."""

    def __init__(self) -> None:
        self._files: Dict[str, List[str]] = {}

    def line(self, path: str, number: int) -> str:
        lines = self._files.get(path)
        if lines is None:
            try:
                lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            self._files[path] = lines
        return lines[number - 1] if 0 < number <= len(lines) else ""


def fingerprints(findings: Sequence[Finding], root: Path) -> List[str]:
    """A fingerprint per finding that survives lines moving: the rule, the file (relative to the
    root) and the text of the reported line without its indentation, plus which occurrence of
    that triple it is (``hash:n``, the shape of GitHub's ``primaryLocationLineHash``)."""
    import hashlib

    lines = _Lines()
    seen: Counter = Counter()
    out = []
    for f in findings:
        where = _location_uri(f.path, root)["uri"] if f.path != "-" else "-"
        text = " ".join(lines.line(f.path, f.location.line).split()) if f.path != "-" else ""
        digest = hashlib.blake2b(f"{f.code}\0{where}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        seen[digest] += 1
        out.append(f"{digest}:{seen[digest]}")
    return out


def to_sarif(findings: Sequence[Finding]) -> str:
    from .rules import BY_CODE

    codes = sorted({f.code for f in findings} | set(BY_CODE))
    index: Dict[str, int] = {code: i for i, code in enumerate(codes)}
    rules = []
    for code in codes:
        rule = BY_CODE[code]
        docs = rule.docs()
        rules.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary or rule.name},
                "fullDescription": {"text": docs},
                "help": {"text": docs, "markdown": docs},
                "helpUri": rule.url(),
                "defaultConfiguration": {"level": "error" if code == "RTY001" else "warning"},
                "properties": {"tags": ["reliability", "retry"]},
            }
        )
    root = source_root()
    results = []
    for f, fingerprint in zip(findings, fingerprints(findings, root)):
        artifact = _location_uri(f.path, root) if f.path != "-" else {"uri": "stdin"}
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": severity(f.code),
                "message": {"text": f.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": artifact,
                            "region": {
                                "startLine": f.location.line,
                                "startColumn": f.location.column,
                                "endLine": f.location.end_line,
                                "endColumn": max(f.location.end_column, f.location.column),
                            },
                        }
                    }
                ],
                "partialFingerprints": {"primaryLocationLineHash": fingerprint},
            }
        )
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "retrylint",
                        "version": __version__,
                        "informationUri": "https://github.com/retrylint/retrylint",
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: Sequence[Finding]) -> str:
    lines: List[str] = []
    for f in findings:
        level = "error" if f.code == "RTY001" else "warning"
        props = ",".join(
            [
                f"file={_escape_property(f.path if f.path == '-' else os.path.normpath(f.path))}",
                f"line={f.location.line}",
                f"col={f.location.column}",
                f"endLine={f.location.end_line}",
                f"endColumn={f.location.end_column}",
                f"title={_escape_property(f'retrylint ({f.code})')}",
            ]
        )
        lines.append(f"::{level} {props}::{_escape_data(f'{f.code} {f.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")


def render(findings: Sequence[Finding], fmt: str, unsafe: bool = False) -> str:
    if fmt == "json":
        return to_json(findings)
    if fmt == "sarif":
        return to_sarif(findings)
    if fmt == "github":
        return to_github(findings)
    return text(findings, unsafe)

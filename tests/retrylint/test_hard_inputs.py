"""Hard inputs through the real command line: retrylint never crashes, hangs or goes silent.

Each test asserts the exact outcome: the exit code, the findings (with their line and column)
or the notice, and that no traceback reached the user. Covered elsewhere and not repeated here:
a plain syntax error, a binary file, a file that is not UTF-8, a `klingon` cookie on line 1, a
dangling symlink in a walked folder and ``(x): int = 1`` (valid Python that libcst rejects) are
in test_cli.py.

Tests that could take the whole test process down with them (a segmentation fault, a hang, a
recursion limit that depends on how deep pytest's own stack is) run ``python -m retrylint`` in a
subprocess; the others use the in-process ``run`` fixture.
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
import sys
from typing import List, Tuple

import pytest

from .conftest import FIXED_FOREVER

#: FIXED_FOREVER as written by ``project.write``: RTY101 on the ``while True:`` header (4:5),
#: RTY202 on the ``time.sleep(5)`` call (8:13).
SOURCE = FIXED_FOREVER.lstrip("\n")
EXPECTED = [(4, 5, "RTY101"), (8, 13, "RTY202")]

LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<row>\d+):(?P<col>\d+): (?P<code>RTY\d{3}) (?P<msg>.*)$", re.M)


def findings(out: str, path: str) -> List[Tuple[int, int, str]]:
    return [(int(m["row"]), int(m["col"]), m["code"]) for m in LINE.finditer(out) if m["path"] == path]


def shifted(lines: int, columns: int = 0) -> List[Tuple[int, int, str]]:
    return [(row + lines, col + columns, code) for row, col, code in EXPECTED]


def cli(*args: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "retrylint", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def assert_clean_exit(err: str) -> None:
    assert "Traceback" not in err, err
    assert "internal error" not in err, err


# ---------------------------------------------------------------- encodings and line endings


@pytest.mark.parametrize(
    "name, data",
    [
        ("bom.py", codecs.BOM_UTF8 + SOURCE.encode("utf-8")),
        ("crlf.py", SOURCE.replace("\n", "\r\n").encode("utf-8")),
        ("cr.py", SOURCE.replace("\n", "\r").encode("utf-8")),  # old Mac line endings
    ],
    ids=["utf8-bom", "crlf", "cr"],
)
def test_a_bom_and_any_line_ending_keep_lines_and_columns(project, run, name, data):
    (project.root / name).write_bytes(data)
    code, out, err = run("check", name)
    assert code == 1
    assert findings(out, name) == EXPECTED
    assert_clean_exit(err)


def test_latin1_cookie_with_latin1_bytes_still_finds_the_retry(project, run):
    # Two lines above the code: the cookie and a latin-1 "é" (one byte, not valid UTF-8).
    source = "# -*- coding: latin-1 -*-\nLABEL = 'caf\xe9'\n" + SOURCE
    data = source.encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    (project.root / "latin.py").write_bytes(data)
    code, out, err = run("check", "latin.py")
    assert code == 1
    assert findings(out, "latin.py") == shifted(2)
    assert_clean_exit(err)


def test_unknown_encoding_in_a_line_2_cookie_is_one_clear_rty001(project, run):
    (project.root / "cookie.py").write_bytes(b"#!/usr/bin/env python\n# coding: klingon\n" + SOURCE.encode())
    code, out, err = run("check", "cookie.py")
    assert code == 1
    # One line only: the retry inside cannot be judged, and that is said, not hidden.
    assert [line for line in out.splitlines() if LINE.match(line)] == [
        "cookie.py:1:1: RTY001 bad encoding declaration: unknown encoding: klingon"
    ]
    assert_clean_exit(err)


def test_a_nul_byte_after_the_first_8_kb_is_rty001_not_silence(project, run):
    source = "# " + "x" * 9000 + '\nimport time\nMARKER = "\0"\n'
    with pytest.raises((SyntaxError, ValueError)):
        compile(source, "nul.py", "exec")
    (project.root / "nul.py").write_text(source, encoding="utf-8")
    code, out, err = run("check", "nul.py")
    assert code == 1, out
    # Where it is reported (1:1 as a binary file, or the NUL's line) is the fix's choice.
    assert [code for _, _, code in findings(out, "nul.py")] == ["RTY001"]
    assert_clean_exit(err)


# ---------------------------------------------------------------- whitespace


def test_form_feed_lines_between_definitions(project, run):
    # The GNU/stdlib habit: a ^L on its own line between sections (email/, idlelib/ ...).
    source = SOURCE.replace("def fetch", "\f\ndef fetch") + "\n\f\n\ndef other():\n    return 1\n"
    (project.root / "ff.py").write_text(source, encoding="utf-8")
    code, out, err = run("check", "ff.py")
    assert code == 1
    assert findings(out, "ff.py") == shifted(1)
    assert_clean_exit(err)


def test_form_feed_at_the_start_of_an_indented_line_is_a_notice_not_a_syntax_error(project, run):
    # CPython resets the indentation column at a form feed and accepts this; libcst's tokenizer
    # does not ("no matching outer block for dedent"): a limit of the tool, not the user's error.
    source = SOURCE.replace("        try:", "\f        try:")
    compile(source, "ff.py", "exec")  # valid Python
    (project.root / "ff.py").write_text(source, encoding="utf-8")
    code, out, err = run("check", "ff.py")
    assert code == 0, out
    assert "RTY001" not in out
    assert re.search(r"^retrylint: warning: ff\.py: could not analyse: libcst cannot parse this file", err, re.M)
    assert_clean_exit(err)


def test_tab_indentation_columns_count_a_tab_as_one_character(project, run):
    (project.root / "tabs.py").write_text(SOURCE.replace("    ", "\t"), encoding="utf-8")
    code, out, err = run("check", "tabs.py")
    assert code == 1
    assert findings(out, "tabs.py") == [(4, 2, "RTY101"), (8, 4, "RTY202")]
    assert_clean_exit(err)


def test_a_100k_character_line(project, run):
    (project.root / "long.py").write_text('BLOB = "' + "a" * 100_000 + '"\n' + SOURCE, encoding="utf-8")
    code, out, err = run("check", "long.py")
    assert code == 1
    assert findings(out, "long.py") == shifted(1)
    assert_clean_exit(err)


def test_a_5_mb_file_with_the_retry_at_the_end(project, run):
    # A generated data module: 1000 lines of 5000-character strings, then the retry.
    body = "".join(f'DATA_{i} = "{"x" * 5000}"\n' for i in range(1000))
    (project.root / "big.py").write_text(body + SOURCE, encoding="utf-8")
    assert (project.root / "big.py").stat().st_size > 5_000_000
    code, out, err = run("check", "big.py")
    assert code == 1
    assert findings(out, "big.py") == shifted(1000)
    assert_clean_exit(err)


# ---------------------------------------------------------------- syntax of other Pythons


def test_python_2_print_statement_is_rty001_exit_1(project, run):
    project.write("py2.py", 'print "x"\n')
    code, out, err = run("check", "py2.py")
    assert code == 1
    assert [line for line in out.splitlines() if LINE.match(line)] == [
        "py2.py:1:1: RTY001 SyntaxError: Missing parentheses in call to 'print'. Did you mean print(...)?"
    ]
    assert_clean_exit(err)


def test_python_2_file_with_a_retry_loop_is_rty001_not_findings(project, run):
    source = (
        "import time, urllib2\n"
        "\n"
        "while True:\n"
        "    try:\n"
        '        urllib2.urlopen("http://x")\n'
        "        break\n"
        "    except IOError:\n"
        '        print "retrying"\n'
        "        time.sleep(5)\n"
    )
    (project.root / "py2loop.py").write_text(source, encoding="utf-8")
    code, out, err = run("check", "py2loop.py")
    assert code == 1
    assert findings(out, "py2loop.py") == [(8, 9, "RTY001")]
    assert "SyntaxError: Missing parentheses in call to 'print'" in out
    assert_clean_exit(err)


PEP_695 = "def first[T](items: list[T]) -> T:\n    return items[0]\n\nclass Box[T]:\n    pass\n\ntype Pair[T] = tuple[T, T]\n"
PEP_701 = 'd = {"k": 1}\nlabel = f"{d["k"]} and {f"{d["k"]}"}"\n'


@pytest.mark.parametrize("name, prefix", [("pep695.py", PEP_695), ("pep701.py", PEP_701)])
def test_python_312_syntax_with_a_retry_is_analysed(project, run, name, prefix):
    (project.root / name).write_text(prefix + SOURCE, encoding="utf-8")
    code, out, err = run("check", name)
    assert code == 1, out
    assert findings(out, name) == shifted(prefix.count("\n"))
    assert_clean_exit(err)


@pytest.mark.parametrize("name, source", [("pep695.py", PEP_695), ("pep701.py", PEP_701)])
def test_python_312_syntax_without_a_retry_is_not_the_users_syntax_error(project, run, name, source):
    # The running Python may be older than the code (3.11's ast rejects both files); libcst
    # reads them, so they are valid code, not RTY001.
    (project.root / name).write_text(source, encoding="utf-8")
    code, out, err = run("check", name)
    assert code == 0, out
    assert "RTY001" not in out
    assert_clean_exit(err)


def test_retry_inside_a_match_case(project, run):
    source = (
        "import time, requests\n\n"
        "def fetch(url, mode):\n"
        "    match mode:\n"
        '        case "forever":\n'
        "            while True:\n"
        "                try:\n"
        "                    return requests.get(url, timeout=5)\n"
        "                except requests.ConnectionError:\n"
        "                    time.sleep(5)\n"
        "        case _:\n"
        "            return None\n"
    )
    (project.root / "match.py").write_text(source, encoding="utf-8")
    code, out, err = run("check", "match.py")
    assert code == 1
    assert findings(out, "match.py") == [(6, 13, "RTY101"), (10, 21, "RTY202")]
    assert_clean_exit(err)


# ---------------------------------------------------------------- the file system


def test_symlink_loops_neither_hang_nor_crash(project, run):
    root = project.root
    project.write("app.py", FIXED_FOREVER)
    (root / "pkg").mkdir()
    (root / "pkg" / "up").symlink_to(root, target_is_directory=True)  # a directory loop
    (root / "pkg" / "dir.py").symlink_to(root / "pkg", target_is_directory=True)  # a directory named like a file
    (root / "a.py").symlink_to(root / "b.py")  # a two-link file loop
    (root / "b.py").symlink_to(root / "a.py")
    (root / "self.py").symlink_to(root / "self.py")  # a one-link loop
    code, out, err = run("check", ".")
    assert code == 1
    assert findings(out, "app.py") == EXPECTED
    loop = "RTY001 cannot read file: Too many levels of symbolic links"
    assert [line for line in out.splitlines() if "RTY001" in line] == [
        f"a.py:1:1: {loop}",
        f"b.py:1:1: {loop}",
        f"self.py:1:1: {loop}",
    ]
    assert_clean_exit(err)


def test_unreadable_file_is_rty001(project, run):
    project.write("app.py", FIXED_FOREVER)
    if os.geteuid() == 0:
        # root reads a chmod 000 file anyway; a dangling symlink named on the command line
        # is the unreadable file root meets (a walked one is in test_cli.py).
        (project.root / "secret.py").symlink_to(project.root / "gone" / "secret.py")
        reason = "No such file or directory"
    else:
        secret = project.write("secret.py", FIXED_FOREVER)
        secret.chmod(0)
        reason = "Permission denied"
    try:
        code, out, err = run("check", "app.py", "secret.py")
    finally:
        if (project.root / "secret.py").exists() and not (project.root / "secret.py").is_symlink():
            (project.root / "secret.py").chmod(0o644)
    assert code == 1
    assert findings(out, "app.py") == EXPECTED
    assert [line for line in out.splitlines() if line.startswith("secret.py:")] == [
        f"secret.py:1:1: RTY001 cannot read file: {reason}"
    ]
    assert_clean_exit(err)


def test_a_fifo_named_like_a_source_file_does_not_hang(project):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    project.write("app.py", FIXED_FOREVER)
    os.mkfifo(project.root / "pipe.py")
    # Nothing ever writes to the pipe: a reader that opens it waits forever.
    result = cli("check", ".", cwd=project.root, timeout=10)
    assert result.returncode == 1
    assert findings(result.stdout, "app.py") == EXPECTED
    assert findings(result.stdout, "pipe.py") == [(1, 1, "RTY001")]
    assert_clean_exit(result.stderr)


# ---------------------------------------------------------------- limits of the parser


def test_expression_nested_too_deeply_for_the_analysis_is_a_notice(project):
    # 1500 unary minuses inside the retry site: CPython's own ast gives up (RecursionError),
    # libcst parses it, but its metadata (positions) recurses per level and fails. That used to
    # escape as a KeyError whose message (the repr of the huge node) recursed again: a traceback.
    # A subprocess: the recursion limit is then the default one, not pytest's stack.
    source = SOURCE.replace("timeout=5)", "timeout=5, tag=" + "-" * 1500 + "1)")
    assert source != SOURCE
    (project.root / "deep.py").write_text(source, encoding="utf-8")
    result = cli("check", "deep.py", cwd=project.root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "RTY" not in result.stdout
    assert re.search(r"^retrylint: warning: deep\.py: could not analyse: .*nested too deeply", result.stderr, re.M)
    assert "All checks passed!" in result.stdout
    assert_clean_exit(result.stderr)


def test_brackets_nested_past_cpythons_limit_are_rty001_not_a_segfault(project):
    (project.root / "brackets.py").write_text(SOURCE + "\nX = " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    result = cli("check", "brackets.py", cwd=project.root)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert [(row, code) for row, _, code in findings(result.stdout, "brackets.py")] == [(10, "RTY001")]
    assert "RTY001 SyntaxError: too many nested parentheses" in result.stdout
    assert_clean_exit(result.stderr)


def test_a_long_elif_chain_next_to_a_retry_is_never_an_internal_error(project):
    # Generated dispatch code has chains like this; CPython compiles it without complaint.
    chain = "if x == 0:\n    y = 0\n" + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, 1500))
    (project.root / "dispatch.py").write_text(chain + SOURCE, encoding="utf-8")
    result = cli("check", "dispatch.py", cwd=project.root)
    assert_clean_exit(result.stderr)
    # Either the retry is found where it is, or the file is a "could not analyse" notice.
    if result.returncode == 1:
        assert findings(result.stdout, "dispatch.py") == shifted(2998)
    else:
        assert result.returncode == 0, (result.returncode, result.stderr)
        assert re.search(r"^retrylint: warning: dispatch\.py: could not analyse: ", result.stderr, re.M)

"""``retrylint check --add-noqa``: a directive on each reported line, merged, in a legal place."""

from __future__ import annotations

import ast
import textwrap

from retrylint.add_noqa import _with_directive, comment_lines

from .conftest import CLEAN, FIXED_FOREVER, codes


def dedent(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def add_noqa(run, *args: str):
    return run("check", "--add-noqa", *args)


def test_adds_a_directive_per_reported_line_and_the_check_then_passes(project, run):
    project.write("app.py", FIXED_FOREVER)
    assert codes(run("check", "app.py")[1]) == ["RTY101", "RTY202"]
    assert add_noqa(run, "app.py") == (0, "", "Added 2 noqa directives.\n")
    assert (project.root / "app.py").read_text() == dedent(FIXED_FOREVER).replace(
        "while True:", "while True:  # noqa: RTY101"
    ).replace("time.sleep(5)", "time.sleep(5)  # noqa: RTY202")
    code, out, _ = run("check", "app.py")
    assert (code, codes(out)) == (0, [])


def test_second_run_adds_nothing(project, run):
    project.write("app.py", FIXED_FOREVER)
    add_noqa(run, "app.py")
    once = (project.root / "app.py").read_text()
    assert add_noqa(run, "app.py") == (0, "", "Added 0 noqa directives.\n")
    assert (project.root / "app.py").read_text() == once


def test_several_codes_on_one_line_and_merging_with_an_existing_directive(project, run):
    source = """
        from tenacity import retry, wait_fixed
        @retry(wait=wait_fixed(2))  # keep: see ticket 12
        def f(): ...

        @retry(wait=wait_fixed(2))  # noqa:E501,RTY301, E501
        def g(): ...
    """
    project.write("app.py", source)
    assert codes(run("check", "app.py")[1]) == ["RTY102", "RTY202", "RTY301", "RTY102", "RTY202"]
    assert add_noqa(run, "app.py")[2] == "Added 2 noqa directives.\n"
    lines = (project.root / "app.py").read_text().splitlines()
    # No directive yet: appended after the comment, codes sorted.
    assert lines[1] == "@retry(wait=wait_fixed(2))  # keep: see ticket 12  # noqa: RTY102, RTY202, RTY301"
    # An existing directive: its codes first, in their order, once each; then the new ones.
    assert lines[4] == "@retry(wait=wait_fixed(2))  # noqa: E501, RTY301, RTY102, RTY202"
    assert run("check", "app.py")[0] == 0


def test_a_bare_noqa_is_left_alone():
    assert _with_directive("    while True:  # noqa\n", (17, "# noqa"), ["RTY101"]) == "    while True:  # noqa\n"
    assert _with_directive("x = 1  # noqa: E501\n", (7, "# noqa: E501"), ["RTY101"]) == "x = 1  # noqa: E501, RTY101\n"


def test_only_reported_codes_get_a_directive(project, run):
    project.write("app.py", FIXED_FOREVER)
    assert add_noqa(run, "--select", "RTY202", "app.py")[2] == "Added 1 noqa directive.\n"
    text = (project.root / "app.py").read_text()
    assert "time.sleep(5)  # noqa: RTY202" in text and "RTY101" not in text
    # per-file-ignores: an ignored code is not reported, so it gets no directive either.
    project.write("pyproject.toml", '[tool.retrylint]\nper-file-ignores = { "tests/*" = ["RTY101"] }\n')
    project.write("tests/test_x.py", FIXED_FOREVER)
    add_noqa(run, "tests")
    assert "RTY101" not in (project.root / "tests/test_x.py").read_text()
    assert "# noqa: RTY202" in (project.root / "tests/test_x.py").read_text()


def test_a_finding_on_a_line_that_ends_inside_a_string_gets_the_directive_after_the_string(project, run):
    source = '''
        import time, requests

        def fetch(url, log):
            while True:
                try:
                    return requests.get(url, timeout=5)
                except requests.ConnectionError:
                    time.sleep(5); log("""retrying
                    # noqa: RTY202 is text here
                    soon""")
    '''
    project.write("app.py", source)
    code, out, _ = run("check", "app.py")
    assert ":8:13: RTY202" in out  # reported on the line where the string starts
    add_noqa(run, "app.py")
    text = (project.root / "app.py").read_text()
    ast.parse(text)
    lines = text.splitlines()
    assert lines[7].endswith('log("""retrying')  # untouched: inside the string
    assert lines[9].endswith('soon""")  # noqa: RTY202')
    assert run("check", "app.py")[0] == 0


def test_backslash_continuation_and_open_brackets(project, run):
    source = """
        import time, requests

        def fetch(url):
            while \\
                    True:
                try:
                    return requests.get(url, timeout=5)
                except requests.ConnectionError:
                    time.sleep(
                        5)
    """
    project.write("app.py", source)
    code, out, _ = run("check", "app.py")
    assert [line.split(": ")[0] for line in out.splitlines()[:2]] == ["app.py:4:5", "app.py:9:13"]
    add_noqa(run, "app.py")
    lines = (project.root / "app.py").read_text().splitlines()
    assert lines[3] == "    while \\"  # a comment cannot go before a backslash continuation
    assert lines[4] == "            True:  # noqa: RTY101"
    # Inside brackets a comment is legal and flake8 reads it on that very line.
    assert lines[8] == "            time.sleep(  # noqa: RTY202"
    assert run("check", "app.py")[0] == 0


def test_encoding_bom_and_line_endings_are_kept(project, run):
    body = dedent(FIXED_FOREVER).replace("except requests.ConnectionError:", "except requests.ConnectionError:  # é")
    crlf = body.replace("\n", "\r\n")
    (project.root / "bom.py").write_bytes(b"\xef\xbb\xbf" + crlf.encode("utf-8"))
    latin = "# -*- coding: latin-1 -*-\n" + body
    (project.root / "latin.py").write_bytes(latin.encode("latin-1"))
    assert add_noqa(run, "bom.py", "latin.py")[2] == "Added 4 noqa directives.\n"

    def expected(text: str, eol: str) -> str:
        return text.replace("while True:" + eol, "while True:  # noqa: RTY101" + eol).replace(
            "time.sleep(5)" + eol, "time.sleep(5)  # noqa: RTY202" + eol)

    assert (project.root / "bom.py").read_bytes() == b"\xef\xbb\xbf" + expected(crlf, "\r\n").encode("utf-8")
    assert (project.root / "latin.py").read_bytes() == expected(latin, "\n").encode("latin-1")
    assert run("check", "bom.py", "latin.py")[0] == 0


def test_files_that_do_not_parse_are_not_touched(project, run):
    broken = "import time\nwhile True:\n    try:\n        go(\n    except OSError:\n        time.sleep(1)\n"
    (project.root / "broken.py").write_text(broken)
    project.write("app.py", FIXED_FOREVER)
    assert add_noqa(run, "broken.py", "app.py") == (0, "", "Added 2 noqa directives.\n")
    assert (project.root / "broken.py").read_text() == broken
    assert codes(run("check", "broken.py", "app.py")[1]) == ["RTY001"]


def test_a_clean_project_is_unchanged(project, run):
    project.write("app.py", CLEAN)
    assert add_noqa(run) == (0, "", "Added 0 noqa directives.\n")
    assert (project.root / "app.py").read_text() == dedent(CLEAN)


def test_standard_input_and_fix_are_usage_errors(project, run):
    project.write("app.py", FIXED_FOREVER)
    assert add_noqa(run, "-")[0] == 2
    code, _, err = add_noqa(run, "--fix", "app.py")
    assert code == 2 and "--add-noqa" in err
    assert (project.root / "app.py").read_text() == dedent(FIXED_FOREVER)


def test_comment_lines_maps_string_and_continuation_lines_to_their_end():
    text = 'x = f(\n  1,\n  """a\nb""")\ny = 1 + \\\n  2\n'
    lines, ends = comment_lines(text)
    assert len(lines) == 6
    assert ends == {1: 1, 2: 2, 3: 4, 4: 4, 5: 6, 6: 6}

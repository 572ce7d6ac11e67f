"""RTY001: a file that cannot be checked."""

from __future__ import annotations

from typing import Iterable

from ..model import RetryPolicy
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class SyntaxErrorRule(Rule):
    """
    ## What it does
    Reports files that retrylint cannot check: syntax errors, unreadable files,
    binary files and text in the wrong encoding.

    A file that Python itself accepts but that libcst cannot parse (libcst lags
    behind the grammar in a few corners) is *not* a syntax error: retrylint
    prints a "could not analyse" notice for it instead, with the reason.

    ## Why is this bad?
    A file that is not checked can hide any retry bug. Silence would look like a
    clean bill of health, so the file is reported instead.

    ## Example
    ```python
    def fetch(url:
        return requests.get(url)
    ```

    ## Use instead
    ```python
    def fetch(url):
        return requests.get(url)
    ```
    """

    code = "RTY001"
    name = "syntax-error"
    summary = "The file cannot be parsed or read"

    VALID = [
        Valid("match command:\n    case {'retry': n}:\n        pass\n", "match statements parse"),
        Valid("x = f'{1 + 1:>{10}}'\n", "nested f-string format specs parse"),
        Valid("\ufeffimport time\n", "a byte-order mark is fine"),
        Valid("import time\r\ntime.sleep(1)\r\n", "CRLF line endings are fine"),
        Valid("async def f():\n    async with a as b:\n        await b\n", "async syntax parses"),
        Valid("def f[T](x: T) -> T:\n    return x\n", "3.12 type parameters parse"),
        Valid("x = 1\n\x0c\ny = 2\n", "form feeds between statements are fine"),
        Valid("'''while True:\n    try: pass\n    except: pass'''\n", "code in a string is just a string"),
    ]
    INVALID = [
        Invalid("def fetch(url:\n    return url\n", line=1, message="SyntaxError"),
        Invalid("print 'hello'\n", line=1, message="SyntaxError"),
        Invalid("for x in range(3)\n    pass\n", line=1),
        Invalid("x = (1,\n", message="SyntaxError"),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        return ()  # the engine reports RTY001 before any policy exists

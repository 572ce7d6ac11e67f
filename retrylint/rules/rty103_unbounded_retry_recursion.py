"""RTY103: a function that retries by calling itself, with no limit on depth."""

from __future__ import annotations

from typing import Iterable

from ..describe import delay_phrase
from ..model import RetryPolicy
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class UnboundedRetryRecursion(Rule):
    """
    ## What it does
    Finds functions that retry by calling themselves from their error path (an
    `except` handler or a failed-status branch) with the same arguments and no
    counter that stops the recursion.

    A recursive call counts as a retry when every argument is passed through
    unchanged, is a counter (`retries - 1`, `attempt=attempt + 1`) or a
    constant flag (`_retried=True`). A call that changes other arguments walks
    something (a tree, a list of hosts) and is not a retry. The finding is
    reported on the function's name; `# noqa: RTY103` on any line of the `def`
    header suppresses it.

    ## Why is this bad?
    It retries forever, like an unbounded loop, and on top of that every retry
    adds a stack frame: a long outage ends in `RecursionError` (or, for async
    code, in an ever-growing chain of awaits) instead of a clean give-up.

    ## Example
    ```python
    def fetch(url):
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            time.sleep(1)
            return fetch(url)
    ```

    ## Use instead
    ```python
    def fetch(url, retries=5):
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            if retries == 0:
                raise
            time.sleep(random.uniform(0, 2 ** (5 - retries)))
            return fetch(url, retries - 1)
    ```
    """

    code = "RTY103"
    name = "unbounded-retry-recursion"
    summary = "Retry by recursion with no limit on depth"

    VALID = [
        Valid(
            """
            class Route:
                def call(self, *args):
                    try:
                        return self._callback(*args)
                    except RouteReset:
                        self.reset()
                        return self.call(*args)
            """,
            "RouteReset is a control-flow signal (bottle: a plugin changed the route), not a failure",
        ),
        Valid(
            """
            def load(self):
                try:
                    table = self.client.load_table(self.name)
                except TableNotFound:
                    self.client.create_table(self.name, self.schema)
                    return self.load()
                return table
            """,
            "the handler creates what was missing before running again: a repair, not a retry",
        ),
        Valid(
            """
            import time, requests
            def fetch(url, retries=3):
                try:
                    return requests.get(url)
                except requests.ConnectionError:
                    if retries <= 0:
                        raise
                    time.sleep(1)
                    return fetch(url, retries - 1)
            """,
            "a counter parameter that is checked bounds the recursion",
        ),
        Valid(
            """
            MAX_ATTEMPTS = 5
            def send(client, payload, attempt=1):
                try:
                    return client.send(payload)
                except ConnectionError:
                    if attempt >= MAX_ATTEMPTS:
                        raise
                    return send(client, payload, attempt=attempt + 1)
            """,
            "a keyword counter checked against a constant",
        ),
        Valid(
            """
            def fetch(call, retries=3):
                try:
                    return call()
                except ConnectionError:
                    if retries > 0:
                        return fetch(call, retries - 1)
                    raise
            """,
            "the recursive call itself is guarded by the counter",
        ),
        Valid(
            """
            class Api:
                def request(self, path, _retried=False):
                    try:
                        return self.session.get(path)
                    except TokenExpired:
                        if _retried:
                            raise
                        self.refresh_token()
                        return self.request(path, _retried=True)
            """,
            "a single retry behind a flag",
        ),
        Valid(
            """
            def lookup(node, key):
                try:
                    return node.values[key]
                except KeyError:
                    return lookup(node.parent, key)
            """,
            "walking up a tree changes the arguments: not a retry",
        ),
        Valid(
            """
            def walk(node, visit):
                visit(node)
                for child in node.children:
                    walk(child, visit)
            """,
            "ordinary recursion is not on an error path",
        ),
        Valid(
            """
            class Proxy:
                def get(self, url):
                    try:
                        return self.client.get(url)
                    except ConnectionError:
                        return self.fallback.get(url)
            """,
            "delegating to another object's method of the same name is not recursion",
        ),
        Valid(
            '''
            def doc():
                """Do not retry like this:

                def fetch(url):
                    try:
                        return get(url)
                    except Exception:
                        return fetch(url)
                """
            ''',
            "code in a docstring is not code",
        ),
        Valid(
            """
            def connect(hosts):
                try:
                    return open_connection(hosts[0])
                except OSError:
                    return connect(hosts[1:])
            """,
            "trying the next host changes the arguments",
        ),
    ]
    INVALID = [
        Invalid(
            """
            class Route:
                def call(self, *args):
                    try:
                        return self._callback(*args)
                    except ConnectionResetError:
                        self.reset()
                        return self.call(*args)
            """,
            line=3,
        ),
        Invalid(
            """
            import time, requests
            def fetch(url):
                try:
                    return requests.get(url)
                except requests.ConnectionError:
                    time.sleep(1)
                    return fetch(url)
            """,
            line=3,
            message="forever",
        ),
        Invalid(
            """
            class Consumer:
                def connect(self):
                    try:
                        self.channel = self.open_channel()
                    except OSError:
                        self.connect()
            """,
            line=3,
        ),
        Invalid(
            """
            import asyncio
            async def fetch(client, url):
                try:
                    return await client.get(url)
                except ConnectionError:
                    await asyncio.sleep(1)
                    return await fetch(client, url)
            """,
            line=3,
        ),
        Invalid(
            """
            def call(*args, **kwargs):
                try:
                    return api(*args, **kwargs)
                except ApiError:
                    return call(*args, **kwargs)
            """,
            line=2,
        ),
        Invalid(
            """
            import time, requests
            def get(url):
                response = requests.get(url)
                if response.status_code >= 500:
                    time.sleep(1)
                    return get(url)
                return response
            """,
            line=3,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        if policy.source != "recursion" or not policy.bound.unbounded:
            return
        yield self.at(
            policy,
            f"{policy.description} calls itself from its error path forever {delay_phrase(policy.delay)}; "
            "pass a retry counter that stops it (e.g. `retries - 1`, giving up at 0) or use a bounded loop",
        )

"""RTY303: retrying exceptions that do not heal with time."""

from __future__ import annotations

from typing import Iterable

from ..model import RetryPolicy, known
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class RetryOnPermanentException(Rule):
    """
    ## What it does
    Finds retries whose handler catches an exception that says the input or
    the request is wrong — `ValueError`, `TypeError`, `KeyError`,
    `IndexError`, `AttributeError`, `LookupError`, `UnicodeError`,
    `NotImplementedError`, `json.JSONDecodeError`, `jsonschema`/`pydantic`/
    `marshmallow`/Django `ValidationError`, `PermissionError`,
    `FileNotFoundError` — and goes round again. A handler that looks at the
    exception and re-raises some of them is not reported, nor is a single
    resend (at most two attempts, often bounded by a `_recovery=True` flag):
    that is a repair, such as recreating a missing folder before writing again.

    ## Options
    - `permanent-exceptions`: more exception names to treat as permanent
      (qualified, `myapp.errors.InvalidOrder`, or a bare class name).
    - `transient-exceptions`: names never treated as permanent, overriding the
      built-in list.

    ## Why is this bad?
    Ask whether the error has anything to do with time. Validation, schema,
    lookup and permission errors do not: they fail identically on every
    attempt, so the retry only delays the real error by the whole backoff
    schedule, and a message that can never succeed turns into a poison message
    that blocks its queue. Send it to the dead-letter queue on the first
    failure instead.

    ## Example
    ```python
    for attempt in range(5):
        try:
            return Order.model_validate_json(fetch(url))
        except (pydantic.ValidationError, ConnectionError):
            time.sleep(random.uniform(0, 2 ** attempt))
    ```

    ## Use instead
    ```python
    for attempt in range(5):
        try:
            body = fetch(url)
        except ConnectionError:
            time.sleep(random.uniform(0, 2 ** attempt))
            continue
        return Order.model_validate_json(body)  # a ValidationError is raised at once
    ```
    """

    code = "RTY303"
    name = "retry-on-permanent-exception"
    summary = "A permanent (validation, lookup, permission) error is retried"

    VALID = [
        Valid(
            """
            import time
            def wait_listed(driver, subid):
                for _ in range(3):
                    try:
                        return [n for n in driver.list_nodes() if n.id == subid][0]
                    except IndexError:
                        time.sleep(1)
            """
        ),
        Valid(
            """
            import os
            class Store:
                def write(self, data, _recovery=False):
                    try:
                        with open(self.path, "w") as fh:
                            fh.write(data)
                    except FileNotFoundError:
                        if _recovery:
                            return False
                        os.makedirs(os.path.dirname(self.path), exist_ok=True)
                        return self.write(data, _recovery=True)
            """
        ),
        Valid(
            """
            class Fields:
                _registry = {}

                @classmethod
                def get(cls, model):
                    try:
                        return cls._registry[model]
                    except KeyError:
                        cls(model=model)
                        return cls.get(model=model)
            """,
            "populate-on-miss (mayan registry): the KeyError handler fills in what was missing",
        ),
        Valid(
            """
            import json, time
            def token(request):
                for attempt in range(3):
                    response = request("POST")
                    try:
                        data = json.loads(response.data)
                    except ValueError:
                        data = response.data
                    if response.status == 200:
                        return data
                    if not can_retry(response.status, data):
                        raise RuntimeError(data)
                    time.sleep(1)
            """,
            "a non-JSON body is kept and the status checks decide (google-auth): ValueError is not what is retried",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "a transient error",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ValueError:
                        raise
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "ValueError leaves at once",
        ),
        Valid(
            """
            import json, random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return json.loads(call())
                    except json.JSONDecodeError:
                        return None
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "a decode error returns instead of retrying",
        ),
        Valid(
            """
            def ask_port():
                while True:
                    try:
                        return int(input("port: "))
                    except ValueError:
                        print("a number, please")
            """,
            "re-prompting a user",
        ),
        Valid(
            """
            import logging
            def parse_all(rows, parse):
                out = []
                for row in rows:
                    try:
                        out.append(parse(row))
                    except ValueError:
                        logging.warning("bad row")
                        continue
                return out
            """,
            "skipping bad rows is not retrying them",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ValueError as exc:
                        if "temporarily unavailable" not in str(exc):
                            raise
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "the handler decides from the exception",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except TimeoutError:
                        time.sleep(random.uniform(0, 2 ** attempt))
                    except KeyError:
                        break
            """,
            "KeyError breaks out",
        ),
        Valid(
            """
            import random, time
            def read_config(path):
                for attempt in range(3):
                    try:
                        with open(path) as f:
                            return f.read()
                    except FileNotFoundError:
                        return ""
                    except OSError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "a missing file is answered at once",
        ),
        Valid(
            '''
            def doc():
                """except ValueError: retry -- never do this"""
            ''',
            "code in a docstring",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import time
            def first_row(client, key):
                for _ in range(3):
                    try:
                        return client.fetch(key)[0]
                    except IndexError:
                        time.sleep(1)
            """,
            line=7,
        ),
        Invalid(
            """
            from myproject.celery import app
            from myproject.models import Component

            @app.task(trail=False, autoretry_for=(Component.DoesNotExist,), retry_backoff=60)
            def update_glossary(pk):
                Component.objects.get(pk=pk).update()
            """,
            line=5,
            message="DoesNotExist",
        ),
        Invalid(
            """
            import time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ValueError:
                        time.sleep(2 ** attempt)
            """,
            line=7,
            message="`ValueError`",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except (KeyError, ConnectionError):
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=7,
            message="`KeyError`",
        ),
        Invalid(
            """
            import random, time
            from json import JSONDecodeError
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except JSONDecodeError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=8,
            message="json.JSONDecodeError",
        ),
        Invalid(
            """
            import random, time
            import pydantic
            def fetch(call, model):
                for attempt in range(5):
                    try:
                        return model.model_validate_json(call())
                    except pydantic.ValidationError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=8,
        ),
        Invalid(
            """
            import time
            def upload(client, path, retries=3):
                try:
                    return client.upload(path)
                except PermissionError:
                    if not retries:
                        raise
                    time.sleep(1)
                    return upload(client, path, retries - 1)
            """,
            line=6,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        if policy.source in ("loop", "recursion") and known(policy.bound.attempts) and float(policy.bound.attempts) <= 2:  # type: ignore[arg-type]
            return  # one resend, typically after a repair (recreate the folder, drop the corrupt cache)
        for clause in policy.errors:
            if clause.permanent_exit_before:
                continue
            permanent = [name for name in clause.names if settings.is_permanent(name)]
            if not permanent:
                continue
            names = ", ".join(f"`{n}`" for n in permanent)
            yield self.at(
                policy,
                f"{policy.description} retries {names}, which fails the same way on every attempt; "
                "raise it (or send the work to the dead-letter queue) on the first failure",
                clause.location,
            )

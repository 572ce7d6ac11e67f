"""RTY301: a retry that catches everything."""

from __future__ import annotations

from typing import Iterable

from ..model import CatchKind, RetryPolicy, known
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class RetryOnAnyException(Rule):
    """
    ## What it does
    Finds retries whose handler catches `Exception`, `BaseException` or
    everything (a bare `except:`) and goes round again, with no exit for
    permanent errors first: no earlier `except SomeError: raise`, and no check
    in the handler that looks at the exception (`isinstance(e, …)`, its status
    code, an `is_retryable(e)` call) and re-raises or returns before retrying.

    The finding is reported on the `except` clause. A hand-written retry of
    at most two attempts (one resend, typically after a repair: a token
    refreshed, a connection reopened, a path added) is not reported, as for
    RTY201: it can at most double the calls a permanent error costs.

    ## Why is this bad?
    Only transient failures deserve a retry. A catch-all also retries bad
    input, 4xx responses, missing resources and programming errors
    (`TypeError`, `AttributeError`), which fail the same way every time: the
    retry wastes its whole budget, delays the real error, and a message that
    can never succeed blocks the queue as a poison message. A bare `except:`
    even retries `KeyboardInterrupt`.

    ## Example
    ```python
    for attempt in range(5):
        try:
            return client.get(url)
        except Exception:
            time.sleep(random.uniform(0, 2 ** attempt))
    ```

    ## Use instead
    ```python
    for attempt in range(5):
        try:
            return client.get(url)
        except (ConnectionError, TimeoutError):
            time.sleep(random.uniform(0, 2 ** attempt))
    ```
    """

    code = "RTY301"
    name = "retry-on-any-exception"
    summary = "Retry catches every exception"

    VALID = [
        Valid(
            """
            import os, sys
            def load(path):
                try:
                    return import_string(path)
                except Exception:
                    cwd = os.getcwd()
                    if cwd not in sys.path:
                        sys.path.insert(0, cwd)
                        return load(path)
                    raise
            """,
            "one resend after a repair that makes its own guard false",
        ),
        Valid(
            """
            import logging, queue

            def next_batch(self):
                batch = []
                while len(batch) < self.batch_size:
                    try:
                        item = self._queue.get(block=True, timeout=1)
                        batch.append(self.serialize(item))
                    except queue.Empty:
                        break
                    except Exception:
                        logging.exception("dropping an item that would not serialize")
                        self._queue.task_done()
                return batch
            """,
            "each round takes the next item of a queue: going round again reads new work",
        ),
        Valid(
            """
            from tenacity import Retrying, stop_after_attempt

            def run_once(task):
                for attempt in Retrying(stop=stop_after_attempt(1), reraise=True):
                    with attempt:
                        return task()
            """,
            "a single attempt retries nothing",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except (ConnectionError, TimeoutError):
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "only transient errors are caught",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except (ValueError, KeyError):
                        raise
                    except Exception:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "permanent errors leave first",
        ),
        Valid(
            """
            import random, time
            def fetch(call, is_retryable):
                for attempt in range(5):
                    try:
                        return call()
                    except Exception as exc:
                        if not is_retryable(exc):
                            raise
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "the handler filters before retrying",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except Exception as exc:
                        if isinstance(exc, (ValueError, PermissionError)):
                            raise
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "isinstance filter",
        ),
        Valid(
            """
            import logging
            def consume(messages, handle):
                for message in messages:
                    try:
                        handle(message)
                    except Exception:
                        logging.exception("failed; moving on")
            """,
            "a consumer that logs and moves on does not retry",
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
                    except Exception:
                        logging.exception("giving up")
                        raise
            """,
            "the catch-all exits instead of retrying",
        ),
        Valid(
            """
            import logging, time
            def supervise(run_worker):
                while True:
                    try:
                        run_worker()
                    except Exception:
                        logging.exception("worker crashed")
                    time.sleep(5)
            """,
            "a supervisor that restarts a worker on success too is not a retry",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except Exception as exc:
                        if getattr(exc, "status_code", 500) in (500, 502, 503):
                            time.sleep(random.uniform(0, 2 ** attempt))
                            continue
                        raise
            """,
            "only some statuses go round again",
        ),
        Valid(
            '''
            def doc():
                """
                for attempt in range(3):
                    try:
                        return call()
                    except Exception:
                        pass
                """
            ''',
            "code in a docstring",
        ),
        Valid(
            """
            import json
            from retry import retry
            class Service:
                def call(self, api, form):
                    try:
                        return json.loads(self.post(api, form))
                    except Exception as e:
                        try:
                            return json.loads(str(e))
                        except ValueError:
                            raise Exception(str(e))

                @retry(tries=3, delay=1, backoff=2, jitter=(0, 1))
                def bind(self, form):
                    try:
                        return self.call("Bind", form)
                    except Exception as e:
                        raise Exception(str(e))
            """,
            "the helper answers the server's refusals with the error body: only failures with no answer reach the retry",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import json
            from retry import retry
            class Service:
                def call(self, api, form):
                    try:
                        return json.loads(self.post(api, form))
                    except Exception as e:
                        raise Exception(str(e))

                @retry(tries=3, delay=1, backoff=2, jitter=(0, 1))
                def bind(self, form):
                    return self.call("Bind", form)
            """,
            line=11,
            message="`Exception`",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except Exception:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=7,
            message="`Exception`",
        ),
        Invalid(
            """
            import time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except:
                        time.sleep(1)
            """,
            line=7,
            message="bare `except:`",
        ),
        Invalid(
            """
            import time
            def fetch(call):
                while True:
                    try:
                        return call()
                    except BaseException:
                        time.sleep(1)
            """,
            line=7,
        ),
        Invalid(
            """
            import time
            def fetch(call):
                for attempt in range(3):
                    try:
                        return call()
                    except (ConnectionError, Exception) as exc:
                        print(exc)
                        time.sleep(1)
            """,
            line=7,
        ),
        Invalid(
            """
            import time
            def fetch(url, retries=3):
                try:
                    return get(url)
                except Exception:
                    if retries == 0:
                        raise
                    time.sleep(1)
                    return fetch(url, retries - 1)
            """,
            line=6,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        if policy.source in ("loop", "recursion") and known(policy.bound.attempts) and float(policy.bound.attempts) <= 2:  # type: ignore[arg-type]
            return  # one resend, typically after a repair: as RTY201, it can at most double the load
        for clause in policy.errors:
            if clause.kind is not CatchKind.CATCH_ALL or clause.permanent_exit_before:
                continue
            caught = "a bare `except:`" if not clause.names else "`" + next(
                n for n in clause.names if n in ("Exception", "BaseException")
            ) + "`"
            yield self.at(
                policy,
                f"{policy.description} catches {caught} and retries it, so permanent errors (bad input, 4xx, "
                "missing resources, bugs) are retried too; catch the transient errors only "
                "(e.g. `ConnectionError`, `TimeoutError`) or re-raise permanent ones first",
                clause.location,
            )

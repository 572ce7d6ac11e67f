"""Report 14 (the audit of issue 14): the false greens that were left, and the wrong messages.

Each test here failed on the code before its fix (checked by running it with the fix reverted).
"""

import asyncio
import sys
import time

import pytest
import tenacity

from pytest_retry_check import (
    RetryCheckFailed,
    assert_bounded,
    assert_gives_up,
    capture_trace,
)

pytest_plugins = ["pytester"]
FAST = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")


# -- 1: an assertion that comes wrapped still propagates --------------------------------------
@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.TaskGroup")
def test_an_assertion_inside_a_task_group_propagates(fake_downstream):
    ds = fake_downstream(then="ok")

    async def check():
        assert await ds.acall() == "x", "wrong body"

    async def main():
        with capture_trace(ds):
            async with asyncio.TaskGroup() as tg:
                tg.create_task(check())

    with pytest.raises(ExceptionGroup) as info:
        asyncio.run(main())
    assert info.group_contains(AssertionError, match="wrong body")


def test_an_assertion_inside_a_tenacity_polling_helper_propagates(fake_downstream):
    ds = fake_downstream(then="ok")

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_fixed(1))
    def eventually():
        assert ds() == "x", "wrong body"

    with pytest.raises(tenacity.RetryError):
        with capture_trace(ds):
            eventually()


def test_an_assertion_chained_into_another_exception_propagates(fake_downstream):
    ds = fake_downstream(then="ok")
    with pytest.raises(RuntimeError) as info:
        with capture_trace(ds):
            try:
                assert ds() == "x", "wrong body"
            except AssertionError as exc:
                raise RuntimeError("check failed") from exc
    assert isinstance(info.value.__cause__, AssertionError)


def test_a_give_up_raised_while_handling_an_error_is_still_recorded(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:  # a correct client: its give-up chains the downstream's error
        try:
            ds()
        except ConnectionError as exc:
            raise TimeoutError("gave up") from exc
    assert run.trace.outcome == "raised"


# -- 2: a crash is not giving up ----------------------------------------------------------------
class OrderUnavailable(Exception):
    def __init__(self, order_id, attempts):
        super().__init__(order_id, attempts)


def _fetch_with_a_broken_give_up(ds):
    for attempt in range(3):
        try:
            return ds("/orders/42")
        except ConnectionError:
            if attempt == 2:
                raise OrderUnavailable(42)  # noqa: the bug: TypeError, 'attempts' is missing
            time.sleep(2**attempt)


def test_a_give_up_path_that_crashes_fails_gives_up_and_bounded(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        _fetch_with_a_broken_give_up(ds)
    with pytest.raises(RetryCheckFailed, match=r"raised TypeError.*a bug, not giving up"):
        assert_gives_up(run)
    with pytest.raises(RetryCheckFailed, match=r"raised TypeError.*a bug, not giving up"):
        assert_bounded(run, max_attempts=3)


def test_a_dead_letter_write_the_capture_cannot_take_fails_gives_up(fake_downstream, dead_letters):
    def handle(api, dlq, msg):
        for attempt in range(3):
            try:
                return api("/orders")
            except ConnectionError:
                time.sleep(2**attempt)
        dlq.no_such_method(msg)  # an AttributeError on the capture

    api = fake_downstream(then=503)
    with capture_trace(api, dead_letters=dead_letters) as run:
        handle(api, dead_letters, {"id": 7})
    with pytest.raises(RetryCheckFailed, match="AttributeError"):
        assert_gives_up(run)


def test_a_bug_the_test_names_is_accepted(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        _fetch_with_a_broken_give_up(ds)
    assert_gives_up(run, raises=TypeError)  # the test says so: not a surprise
    with capture_trace(ds, catch=TypeError) as run:
        _fetch_with_a_broken_give_up(ds)
    assert_bounded(run, max_attempts=3)


def test_a_give_up_by_a_domain_error_still_passes(fake_downstream):
    ds = fake_downstream(then=503)

    def fetch():
        for attempt in range(3):
            try:
                return ds("/orders/42")
            except ConnectionError as exc:
                if attempt == 2:
                    raise OrderUnavailable(42, 3) from exc
                time.sleep(2**attempt)

    with capture_trace(ds) as run:
        fetch()
    assert_bounded(run, max_attempts=3)
    assert_gives_up(run, raises=OrderUnavailable)
    assert_gives_up(run)

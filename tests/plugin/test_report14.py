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

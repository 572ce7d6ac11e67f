"""The captured-clock scan looks past the first level (issue 14): an object inside an object, a
tenacity ``Retrying``'s ``stop``/``sleep`` (also behind ``@tenacity.retry``), and the module state
of the code under test's package; and it stays quiet on what tenacity, backoff, stamina, urllib3,
httpx and requests keep. Nothing here sleeps for real."""

import pytest

pytest_plugins = ["pytester"]
FAST = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function", "-W", "default::pytest_retry_check.CapturedClockWarning")


def _warned(result) -> str:
    out = result.stdout.str()
    return out[out.index("CapturedClockWarning:"):] if "CapturedClockWarning:" in out else ""


def test_an_object_inside_an_object_is_looked_into(pytester):
    pytester.makepyfile(
        test_nested="""
        import time

        class Timer:
            def __init__(self, clock):
                self.clock = clock

        class Client:
            def __init__(self):
                self.timer = Timer(time.monotonic)
                self.budgets = {"orders": Timer(time.time)}

        CLIENT = Client()

        def test_it(fake_clock):
            pass
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1)
    warned = _warned(result)
    assert "the attribute .clock of a test_nested.Timer object (test_nested.CLIENT.timer) is the real time.monotonic" in warned, warned
    assert "the attribute .clock of a test_nested.Timer object (test_nested.CLIENT.budgets['orders']) is the real time.time" in warned, warned


def test_a_tenacity_retrying_stop_and_a_decorated_function_are_looked_into(pytester):
    pytester.makepyfile(
        test_tenacity_deep="""
        import time

        import tenacity

        class StopAfterRealSeconds:
            def __init__(self, seconds, clock=None):
                self.seconds, self.clock = seconds, clock

            def __call__(self, state):
                return False

        POLICY = tenacity.Retrying(stop=tenacity.stop_any(tenacity.stop_after_attempt(5), StopAfterRealSeconds(30, clock=time.monotonic)))

        @tenacity.retry(sleep=time.sleep, stop=tenacity.stop_after_attempt(3))
        def fetch(orders):
            return orders()

        def test_it(fake_clock):
            pass
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1)
    warned = _warned(result)
    assert "StopAfterRealSeconds object (test_tenacity_deep.POLICY.stop.stops[1]) is the real time.monotonic" in warned, warned
    assert "the attribute .sleep of a tenacity.Retrying object (test_tenacity_deep.fetch.retry) is the real time.sleep" in warned, warned


def test_module_state_of_the_code_under_tests_package_is_looked_into(pytester):
    pytester.mkpydir("shop")
    pytester.makepyfile(
        **{
            "shop/settings": """
            import time
            import tenacity

            RETRY = tenacity.Retrying(sleep=time.sleep)
            """,
            "shop/clients": """
            from shop import settings

            class Client:
                def get(self):
                    return settings.RETRY
            """,
            "test_shop": """
            from shop.clients import Client

            def test_it(fake_clock):
                Client()
            """,
        }
    )
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1)
    warned = _warned(result)
    assert "the attribute .sleep of a tenacity.Retrying object (shop.settings.RETRY) is the real time.sleep" in warned, warned


def test_what_retry_and_http_libraries_keep_is_not_reported(pytester):
    pytester.makepyfile(
        test_libraries_quiet="""
        import backoff
        import httpx
        import requests
        import stamina
        import tenacity
        import urllib3

        HTTPX = httpx.Client(transport=httpx.HTTPTransport(retries=3), timeout=5)
        AHTTPX = httpx.AsyncClient()
        SESSION = requests.Session()
        POOL = urllib3.PoolManager(retries=urllib3.Retry(total=5, backoff_factor=0.5))
        POLICY = tenacity.Retrying(stop=tenacity.stop_after_delay(30), wait=tenacity.wait_random_exponential(max=20))

        @tenacity.retry(stop=tenacity.stop_after_delay(30), wait=tenacity.wait_exponential())
        def fetch_tenacity(orders):
            return orders()

        @backoff.on_exception(backoff.expo, ConnectionError, max_time=30)
        def fetch_backoff(orders):
            return orders()

        @stamina.retry(on=ConnectionError, timeout=30)
        def fetch_stamina(orders):
            return orders()

        class Service:
            def __init__(self):
                self.http = HTTPX
                self.session = SESSION
                self.pool = POOL
                self.policy = POLICY

        SERVICE = Service()

        def test_it(fake_clock, fake_downstream):
            orders = fake_downstream(fail_first=1)
            assert fetch_tenacity(orders) == "ok"
            service = Service()
            assert fetch_backoff(fake_downstream(fail_first=1)) == "ok"
            assert fetch_stamina(fake_downstream(fail_first=1)) == "ok"
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1)
    assert "CapturedClockWarning" not in result.stdout.str(), result.stdout.str()

"""RTY502 (handler-outlives-visibility-timeout) and RTY503 (non-idempotent-retry), issue 13.

The rules' own VALID/INVALID cases run in test_rule_cases.py; here: what the rules assume
about the real libraries (celery, kombu, botocore, urllib3, httpcore), and edge cases."""

from __future__ import annotations

import inspect
import re
import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.extract import visibility
from retrylint.extract.idempotency import KEY_NAME, READ_ENDPOINT

CODES = ("RTY502", "RTY503")


def findings(code: str, select=CODES, narrowing: bool = True):
    report = check_source(textwrap.dedent(code), "case.py", settings_with(select), narrowing=narrowing)
    assert report.error is None, report.error
    return [(f.code, f.location.line, f.message) for f in report.findings if f.code in select]


# ---------------------------------------------------------------- the libraries' own facts


def test_celery_setting_names_are_celerys_own():
    from celery.app import defaults

    task = defaults.NAMESPACES["task"]
    assert "transport_options" in defaults.NAMESPACES["broker"]
    for name, kind in visibility.CELERY_SETTINGS.items():
        if name.startswith("task_"):
            assert name[len("task_"):] in task, name
        elif name.startswith("celeryd_task_") or name == "acks_late":
            old = {o for option in task.values() for o in (option.old or ())}
            assert name in old or f"celery_{name}" in old, name
    assert task["acks_late"].default is False  # without acks_late, a message is acked before the task runs


def test_kombu_sqs_and_redis_read_visibility_timeout_from_the_transport_options():
    import kombu.transport.SQS as sqs
    import kombu.transport.redis as redis

    assert "self.transport_options.get('visibility_timeout')" in inspect.getsource(sqs.Channel)
    assert "'visibility_timeout'" in inspect.getsource(redis.Channel)


def test_botocore_has_the_parameters_the_rules_read():
    import botocore.session

    session = botocore.session.get_session()
    sqs = session.get_service_model("sqs")
    assert "VisibilityTimeout" in sqs.operation_model("ReceiveMessage").input_shape.members
    assert {"ChangeMessageVisibility", "ChangeMessageVisibilityBatch"} <= set(sqs.operation_names)
    assert {"change_message_visibility", "change_message_visibility_batch"} <= visibility.HEARTBEATS
    assert "MessageDeduplicationId" in sqs.operation_model("SendMessage").input_shape.members
    dynamodb = session.get_service_model("dynamodb")
    assert {"ConditionExpression", "Expected"} <= set(dynamodb.operation_model("PutItem").input_shape.members)


def test_botocore_says_a_fifo_send_without_a_dedup_id_fails_or_dedupes_on_the_body():
    """Why a FIFO send with no MessageDeduplicationId and a stable body is not reported."""
    import botocore.session

    sqs = botocore.session.get_session().get_service_model("sqs")
    doc = re.sub("<[^>]+>", "", sqs.operation_model("SendMessage").input_shape.members["MessageDeduplicationId"].documentation)
    assert "doesn't have ContentBasedDeduplication set, the action fails with an error" in doc
    assert "uses a SHA-256 hash to generate the MessageDeduplicationId using the body" in doc


def test_urllib3_resends_post_only_when_allowed_and_after_the_request_only_with_read_or_status_retries():
    from urllib3.exceptions import MaxRetryError, ReadTimeoutError
    from urllib3.util.retry import Retry

    assert "POST" not in Retry.DEFAULT_ALLOWED_METHODS
    assert not Retry(total=5, status_forcelist=[503]).is_retry("POST", 503)
    assert Retry(total=5, status_forcelist=[503], allowed_methods=["POST"]).is_retry("POST", 503)
    assert Retry(total=5, status_forcelist=[503], allowed_methods=None).is_retry("POST", 503)
    # read=0: a read error after the request went out is not retried.
    with pytest.raises(MaxRetryError):
        Retry(total=3, connect=3, read=0, allowed_methods=None).increment(
            method="POST", url="/orders", error=ReadTimeoutError(None, "/orders", "timed out"))
    # read left at its default: it is (the POST is sent again).
    retry = Retry(total=3, allowed_methods=None).increment(
        method="POST", url="/orders", error=ReadTimeoutError(None, "/orders", "timed out"))
    assert retry.total == 2


def test_httpx_transport_retries_only_connection_failures():
    import httpcore._sync.connection as connection

    source = inspect.getsource(connection)
    assert "except (ConnectError, ConnectTimeout):" in source
    assert "retries_left" in source


# ---------------------------------------------------------------- RTY502


SQS_CONSUMER = """
import json
import boto3, tenacity

sqs = boto3.client("sqs")

@tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
def charge(order): ...

def consume(queue_url):
    while True:
        resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout={visibility})
        for message in resp.get("Messages", []):
            {heartbeat}
            charge(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
"""


def _consumer(visibility="30", heartbeat="pass"):
    return SQS_CONSUMER.replace("{visibility}", visibility).replace("{heartbeat}", heartbeat)


def test_sqs_visibility_against_the_retrys_whole_schedule():
    found = findings(_consumer("30"))
    assert [(c, line) for c, line, _ in found] == [("RTY502", 12)]
    message = found[0][2]
    assert "can wait 51 s in all" in message and "visibility timeout of 30 s" in message
    assert "change_message_visibility" in message and "45 s" in message
    assert findings(_consumer("51"))  # equal: the window ends as the last wait ends
    assert not findings(_consumer("60"))


def test_a_heartbeat_or_an_unknown_window_silences_rty502():
    beat = 'sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=120)'
    assert not findings(_consumer("30", beat))
    assert not findings(_consumer("settings.VISIBILITY"))
    assert not findings(_consumer('int(os.environ["VISIBILITY"])'))


def test_rty502_narrowed_and_whole_agree_when_the_heartbeat_is_in_another_function():
    code = _consumer("30").replace(
        "def consume(queue_url):",
        'def extend(queue_url, message):\n    sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], '
        "VisibilityTimeout=120)\n\ndef consume(queue_url):",
    )
    assert findings(code) == findings(code, narrowing=False) == []


def test_celery_countdown_held_as_an_eta_message():
    code = """
    from celery import Celery

    app = Celery("shop", broker="redis://localhost")
    app.conf.broker_transport_options = {"visibility_timeout": 600}

    @app.task(bind=True, max_retries=12, retry_backoff=True, autoretry_for=(ConnectionError,))
    def sync(self, account_id):
        ...
    """
    found = findings(code)
    assert [line for _, line, _ in found] == [7]
    assert "10 min" in found[0][2] and "autoretry_for" in found[0][2]
    # 2 ** 11 s, capped at celery's default retry_backoff_max of 600 s: the window itself, so it
    # fires; a cap of 300 s does not, nor do 8 retries (at most 128 s).
    assert not findings(code.replace("retry_backoff=True,", "retry_backoff=True, retry_backoff_max=300,"))
    assert not findings(code.replace("max_retries=12", "max_retries=8"))


def test_celery_acks_late_per_task_overrides_the_configuration():
    code = """
    from celery import Celery

    app = Celery("shop", broker="sqs://")
    app.conf.update(broker_transport_options={"visibility_timeout": 60}, task_acks_late=True)

    @app.task(time_limit=300, acks_late=False)
    def rebuild_index():
        ...

    @app.task(soft_time_limit=90)
    def export():
        ...
    """
    found = findings(code)
    assert [line for _, line, _ in found] == [11]
    assert "at least `soft_time_limit` = 1.5 min (no hard limit)" in found[0][2]


def test_django_style_celery_settings():
    code = """
    CELERY_BROKER_URL = "sqs://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 30, "region": "eu-west-1"}
    CELERY_TASK_ACKS_LATE = True
    CELERY_TASK_TIME_LIMIT = 45
    """
    found = findings(code)
    assert [line for _, line, _ in found] == [5]
    assert "45 s" in found[0][2] and "30 s" in found[0][2]


def test_rty502_never_crashes_on_odd_configuration():
    for code in (
        "broker_transport_options = load()\ntask_time_limit = 10\n",
        "broker_transport_options = {'visibility_timeout': 'soon'}\ntask_acks_late = True\ntask_time_limit = 100\n",
        "import boto3\nsqs = boto3.client('sqs')\ndef f(**kw):\n    sqs.receive_message(VisibilityTimeout=30, **kw)\n",
        "import boto3\nsqs = boto3.client('sqs')\nsqs.create_queue(QueueName='q', Attributes={'VisibilityTimeout': 'x'})\n",
        "visibility_timeout = 5\n",
    ):
        findings(code)


# ---------------------------------------------------------------- RTY503


def test_the_key_names_and_read_endpoints():
    for name in ("Idempotency-Key", "X-Idempotency-Key", "idempotency_key", "MessageDeduplicationId", "X-Request-ID",
                 "ClientToken", "client_token"):
        assert KEY_NAME.search(name), name
    for name in ("Content-Type", "Authorization", "X-Api-Key"):
        assert not KEY_NAME.search(name), name
    for url in ("https://es/_search", "/v1/chat/completions", "/oauth/token", "/graphql", "/api/query"):
        assert READ_ENDPOINT.search(url), url
    for url in ("/api/orders", "/v1/charges", "/tickets", "/users/{}/messages"):
        assert not READ_ENDPOINT.search(url), url


def test_a_key_made_once_outside_the_retry_is_stable_and_one_made_inside_is_not():
    outside = """
    import uuid
    import requests, tenacity

    def place_order(order):
        key = str(uuid.uuid4())
        return _post(order, key)

    @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
    def _post(order, key):
        return requests.post("https://api.shop.example/orders", json=order, headers={"Idempotency-Key": key})
    """
    assert not findings(outside)
    inside = """
    import uuid
    import requests, tenacity

    @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
    def place_order(order):
        key = str(uuid.uuid4())
        return requests.post("https://api.shop.example/orders", json=order, headers={"Idempotency-Key": key})
    """
    found = findings(inside)
    assert [line for _, line, _ in found] == [8]
    assert "`uuid.uuid4()`, made anew on every attempt" in found[0][2]


def test_headers_that_cannot_be_read_or_session_headers_with_a_key_silence_rty503():
    base = """
    import requests, tenacity

    session = requests.Session()
    {setup}

    @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
    def place_order(order, headers):
        return session.post("https://api.shop.example/orders", json=order{extra})
    """
    assert findings(base.replace("{setup}", "").replace("{extra}", ""))
    assert not findings(base.replace("{setup}", "").replace("{extra}", ", headers=headers"))
    assert not findings(base.replace("{setup}", 'session.headers.update({"Idempotency-Key": "k"})').replace("{extra}", ""))
    assert not findings(base.replace("{setup}", "").replace("{extra}", ", **options"))


def test_sql_look_alikes():
    template = """
    import time

    def record(cur, row):
        for attempt in range(5):
            try:
                cur.execute({sql}, row)
                return
            except ConnectionError:
                time.sleep(2 ** attempt)
    """
    fires = ['"INSERT INTO t (a) VALUES (%s)"', '"""\n        insert into t (a) values (%s)"""', "'-- audit\\nINSERT INTO t VALUES (1)'"]
    silent = ['"INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING"', '"INSERT OR IGNORE INTO t VALUES (?)"',
              '"INSERT INTO t (a) VALUES (%s) ON DUPLICATE KEY UPDATE a = a"', '"UPDATE t SET a = %s"', '"SELECT 1"',
              "sql"]
    for sql in fires:
        assert findings(template.replace("{sql}", sql)), sql
    for sql in silent:
        assert not findings(template.replace("{sql}", sql)), sql


def test_django_create_and_its_look_alikes():
    template = """
    from celery import shared_task

    @shared_task(autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
    def record(payload):
        {call}
    """
    assert findings(template.replace("{call}", "Order.objects.create(**payload)"))
    assert findings(template.replace("{call}", "Order.objects.bulk_create(payload)"))
    assert not findings(template.replace("{call}", "Order.objects.get_or_create(ref=payload['ref'])"))
    assert not findings(template.replace("{call}", "Order.objects.bulk_create(payload, ignore_conflicts=True)"))


def test_rty503_only_judges_retried_calls():
    code = """
    import requests, tenacity

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_random_exponential(max=20))
    def fetch(url):
        return requests.get(url)

    def place_order(order):
        fetch("https://api.shop.example/ready")
        return requests.post("https://api.shop.example/orders", json=order)
    """
    assert not findings(code)


def test_a_post_in_the_except_block_is_not_the_retried_attempt():
    code = """
    import time
    import requests

    def sync(client):
        for attempt in range(5):
            try:
                return client.get("https://api.shop.example/orders")
            except requests.ConnectionError as exc:
                requests.post("https://alerts.example/hooks/ops", json={"error": str(exc)})
                time.sleep(2 ** attempt)
    """
    assert not findings(code)


# ---------------------------------------------------------------- the claim, run for real


_PLACE_ORDER = '''
import uuid
import requests, tenacity

@tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_none(),
                retry=tenacity.retry_if_exception_type(requests.ConnectionError))
def place_order(session: requests.Session, order):
    return session.post("https://api.shop.example/orders", json=order, timeout=10{headers})

def checkout(session, order):
    {key}return place_order(session, order)
'''


def _run_against_a_server_that_loses_the_first_answer(code: str) -> int:
    """Run ``checkout`` with real tenacity and requests against a server (``responses``) that
    applies every POST but drops the answer of the first: how many orders it created."""
    import requests
    import responses

    created = set()
    calls = []

    def apply(request):
        key = request.headers.get("Idempotency-Key") or f"no-key-{len(calls)}"
        created.add(key)
        calls.append(key)
        if len(calls) == 1:
            raise requests.ConnectionError("connection reset after the write")
        return 201, {}, "{}"

    namespace: dict = {}
    exec(compile(textwrap.dedent(code), "case.py", "exec"), namespace)
    with responses.RequestsMock() as mock:
        mock.add_callback(responses.POST, "https://api.shop.example/orders", callback=apply)
        namespace["checkout"](requests.Session(), {"sku": "A-1"})
    assert len(calls) == 2  # the retry did run
    return len(created)


def test_a_reported_retry_creates_twice_and_a_silent_one_once():
    unkeyed = _PLACE_ORDER.replace("{headers}", "").replace("{key}", "")
    keyed = (_PLACE_ORDER.replace("order):\n    return session.post", "order, key):\n    return session.post")
             .replace("{headers}", ', headers={"Idempotency-Key": key}')
             .replace("def checkout(session, order):\n    {key}return place_order(session, order)",
                      "def checkout(session, order):\n    key = str(uuid.uuid4())\n    return place_order(session, order, key)"))
    assert [c for c, _, _ in findings(unkeyed)] == ["RTY503"]
    assert _run_against_a_server_that_loses_the_first_answer(unkeyed) == 2
    assert findings(keyed) == []
    assert _run_against_a_server_that_loses_the_first_answer(keyed) == 1


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("code", CODES)
def test_the_rule_command_prints_the_docs(run, code):
    from retrylint.rules import BY_CODE

    rule = BY_CODE[code]
    for name in (code, rule.name):
        exit_code, out, _ = run("rule", name)
        assert exit_code == 0 and "## Why is this bad?" in out and rule.name in out


@pytest.mark.parametrize("code", CODES)
def test_check_reports_the_first_invalid_case_and_noqa_silences_it(project, run, code):
    from retrylint.rules import BY_CODE

    from .conftest import codes

    case = BY_CODE[code].INVALID[0]
    lines = textwrap.dedent(case.code).split("\n")
    (project.root / "service.py").write_text("\n".join(lines), encoding="utf-8")
    exit_code, out, _ = run("check", "--select", code, "--output-format", "json", "service.py")
    import json

    found = json.loads(out)
    assert exit_code == 1 and [f["code"] for f in found] == [code]
    assert found[0]["location"]["row"] == case.line and case.message in found[0]["message"]
    lines[case.line - 1] += f"  # noqa: {code}"
    (project.root / "service.py").write_text("\n".join(lines), encoding="utf-8")
    exit_code, out, _ = run("check", "--select", code, "service.py")
    assert exit_code == 0 and codes(out) == [], out


def test_a_handler_timeout_bounds_what_the_consumer_holds():
    from retrylint.rules import BY_CODE

    valid = next(v.code for v in BY_CODE["RTY502"].VALID if "wait_for" in v.code)
    assert findings(valid) == []
    unbounded = valid.replace('asyncio.wait_for(charge(json.loads(message["Body"])), timeout=45)',
                              'charge(json.loads(message["Body"]))')
    found = findings(unbounded)
    assert [c for c, _, _ in found] == ["RTY502"] and "can wait 1.18 min in all" in found[0][2]  # 71 s, under a 60 s window
    shorter_window = valid.replace("VisibilityTimeout=60", "VisibilityTimeout=30")
    found = findings(shorter_window)
    assert len(found) == 1 and "cut by a 45 s handler timeout" in found[0][2]
    scoped = valid.replace('await asyncio.wait_for(charge(json.loads(message["Body"])), timeout=45)',
                           'async with asyncio.timeout(45):\n                    await charge(json.loads(message["Body"]))')
    assert findings(scoped) == []


def test_a_retry_of_connection_failures_only_never_resends_a_create():
    from retrylint.rules import BY_CODE

    valid = next(v.code for v in BY_CODE["RTY503"].VALID if "httpx.ConnectError, httpx.ConnectTimeout" in v.code)
    assert findings(valid) == []
    for broader in ("httpx.TransportError", "(httpx.ConnectError, httpx.ReadTimeout)"):
        code = valid.replace("(httpx.ConnectError, httpx.ConnectTimeout)", broader)
        assert [c for c, _, _ in findings(code)] == ["RTY503"], broader
    loop = """
    import time
    import requests

    def place_order(order):
        for attempt in range(4):
            try:
                return requests.post("https://api.shop.example/orders", json=order, timeout=10)
            except {caught}:
                time.sleep(2 ** attempt)
    """
    assert findings(loop.replace("{caught}", "requests.ConnectTimeout")) == []
    # requests.ConnectionError also covers a connection reset after the request was written.
    assert [c for c, _, _ in findings(loop.replace("{caught}", "requests.ConnectionError"))] == ["RTY503"]


def test_the_connect_only_exceptions_are_raised_before_the_request_leaves():
    import httpx
    import requests

    assert issubclass(requests.exceptions.ConnectTimeout, requests.exceptions.ConnectionError)
    assert not issubclass(requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError)
    assert issubclass(httpx.ConnectError, httpx.TransportError) and not issubclass(httpx.ReadError, httpx.ConnectError)
    with pytest.raises(requests.exceptions.ConnectionError) as caught:
        requests.post("http://127.0.0.1:9/orders", json={}, timeout=2)  # port 9: nothing listens
    assert "Connection refused" in str(caught.value) or "NewConnectionError" in str(caught.value)


def test_a_service_bus_renewer_with_a_known_limit_extends_the_lock_by_that_much_only():
    code = """
    import time
    from datetime import timedelta
    from azure.servicebus import AutoLockRenewer, ServiceBusClient
    from azure.servicebus.management import ServiceBusAdministrationClient

    admin = ServiceBusAdministrationClient.from_connection_string("Endpoint=sb://shop/")
    admin.create_queue("orders", lock_duration=timedelta(seconds=30))

    def consume(client: ServiceBusClient):
        renewer = AutoLockRenewer({renewal})
        with client.get_queue_receiver("orders", auto_lock_renewer=renewer) as receiver:
            for message in receiver:
                for attempt in range({attempts}):
                    try:
                        process(message)
                        break
                    except ConnectionError:
                        time.sleep(2 ** attempt)
                receiver.complete_message(message)
    """
    found = findings(code.replace("{renewal}", "max_lock_renewal_duration=60").replace("{attempts}", "8"))
    assert [line for _, line, _ in found] == [12]  # 255 s of waits (1 … 128 s) against 30 s + 60 s of renewal
    assert "renewed for `max_lock_renewal_duration` = 1 min (line 11): 1.5 min in all" in found[0][2]
    # range(7) sleeps after its 7th failure too: 1 + 2 + … + 64 = 127 s; range(6): 63 s
    assert [line for _, line, _ in findings(code.replace("{renewal}", "max_lock_renewal_duration=60").replace("{attempts}", "7"))] == [12]
    assert not findings(code.replace("{renewal}", "max_lock_renewal_duration=60").replace("{attempts}", "6"))  # 63 s
    assert not findings(code.replace("{renewal}", "").replace("{attempts}", "8"))  # its default renews for 300 s
    assert not findings(code.replace("{renewal}", "max_lock_renewal_duration=600").replace("{attempts}", "8"))


def test_an_unbounded_celery_countdown_is_said_so():
    code = """
    from celery import Celery

    app = Celery("shop", broker="redis://")
    app.conf.broker_transport_options = {"visibility_timeout": 3600}

    @app.task(bind=True, max_retries=None)
    def sync(self, account_id):
        try:
            push(account_id)
        except ConnectionError as exc:
            raise self.retry(exc=exc, countdown=2 ** self.request.retries)
    """
    found = findings(code)
    assert len(found) == 1 and "a countdown that grows without bound" in found[0][2], found


def test_request_with_the_verb_as_a_keyword_or_positional():
    template = """
    import requests, tenacity

    session = requests.Session()

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_random_exponential(max=5))
    def place_order(order):
        return session.request({args}, json=order)
    """
    for args in ('"POST", "https://api.shop.example/orders"', 'method="POST", url="https://api.shop.example/orders"',
                 'url="https://api.shop.example/orders", method="post"'):
        assert [c for c, _, _ in findings(template.replace("{args}", args))] == ["RTY503"], args
    for args in ('"GET", "https://api.shop.example/orders"', 'method, "https://api.shop.example/orders"'):
        assert findings(template.replace("{args}", args)) == [], args


# ---------------------------------------------------------------- RTY503: a key in the body (issue 13 audit, item 6)

KEYED_BODY = """
import json, uuid
import requests, tenacity

@tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
def create(order):
{body}
"""


@pytest.mark.parametrize("body", [
    # the key beside a spread of the order: the key is visibly sent
    '    return requests.post("https://api.shop.example/v1/orders", json={**order, "idempotency_key": order["id"]}, timeout=10)',
    # set on a copy before the call
    '    body = dict(order)\n    body["idempotency_key"] = order["id"]\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    '    body = {**order}\n    body.update({"idempotency_key": order["id"]})\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    '    body = dict(order)\n    body.update(request_id=order["id"])\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    '    body = dict(order)\n    body.setdefault("idempotency_key", order["id"])\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    '    body = dict(order)\n    body |= {"idempotency_key": order["id"]}\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    # dict(order, key=...) and a serialised body
    '    return requests.post("https://api.shop.example/v1/orders", json=dict(order, idempotency_key=order["id"]), timeout=10)',
    '    return requests.post("https://api.shop.example/v1/orders", data=json.dumps({**order, "idempotency_key": order["id"]}))',
    '    payload = dict(order)\n    payload["idempotency_key"] = order["id"]\n    data = json.dumps(payload)\n'
    '    return requests.post("https://api.shop.example/v1/orders", data=data)',
    # a header dict read from a literal, then given the key
    '    headers = {"Content-Type": "application/json"}\n    headers["Idempotency-Key"] = order["id"]\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=order, headers=headers)',
])
def test_a_key_visibly_in_the_request_body_or_added_to_it_counts(body):
    assert findings(KEYED_BODY.replace("{body}", body)) == []


@pytest.mark.parametrize("body", [
    # twins that must still fire: no key anywhere, or a key made anew on every attempt
    '    return requests.post("https://api.shop.example/v1/orders", json={**order, "note": order["id"]}, timeout=10)',
    '    body = dict(order)\n    body["note"] = order["id"]\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    '    body = dict(order)\n    body["idempotency_key"] = str(uuid.uuid4())\n'
    '    return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)',
    '    return requests.post("https://api.shop.example/v1/orders", json={**order, "idempotency_key": str(uuid.uuid4())})',
])
def test_a_body_without_a_stable_key_still_fires(body):
    found = findings(KEYED_BODY.replace("{body}", body))
    assert [c for c, _, _ in found] == ["RTY503"], body


# ---------------------------------------------------------------- RTY502: issue 13 audit, items 5 and 8

DELETE_ORDER = """
import json
import boto3
import tenacity

sqs = boto3.client("sqs")


@tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
def charge(order):
    return post_order(order)


def consume(url):
    while True:
        resp = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)
        for m in resp.get("Messages", []):
{body}
"""


@pytest.mark.parametrize("body", [
    '            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])\n            charge(json.loads(m["Body"]))',
    '            sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": "1", "ReceiptHandle": m["ReceiptHandle"]}])\n'
    '            order = json.loads(m["Body"])\n            charge(order)',
])
def test_a_message_deleted_before_the_retrying_work_cannot_be_delivered_again(body):
    assert findings(DELETE_ORDER.replace("{body}", body)) == []


@pytest.mark.parametrize("body", [
    # deleted after the work: the usual consumer, reported
    '            charge(json.loads(m["Body"]))\n            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])',
    # deleted first only when it is malformed: the others are still held
    '            if not m.get("Body"):\n                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])\n'
    '                continue\n            charge(json.loads(m["Body"]))',
    '            if not m.get("Body"): sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])\n'
    '            charge(json.loads(m["Body"]))',
])
def test_a_delete_that_does_not_always_come_first_still_fires(body):
    found = findings(DELETE_ORDER.replace("{body}", body))
    assert [c for c, _, _ in found] == ["RTY502"]
    assert "can wait 51 s in all" in found[0][2]


def test_a_boto3_resource_message_deleted_first_is_silent():
    resource = """
    import backoff, boto3

    queue = boto3.resource("sqs").Queue("https://sqs/orders")

    @backoff.on_exception(backoff.expo, ConnectionError, max_tries=8, max_value=30)
    def charge(body): ...

    def consume():
        for message in queue.receive_messages(VisibilityTimeout=30):
            message.delete()
            charge(message.body)
    """
    assert findings(resource) == []
    assert findings(resource.replace("            message.delete()\n            charge(message.body)",
                                     "            charge(message.body)\n            message.delete()"))


WAIT_FOR = """
import asyncio
import aioboto3


async def handle(body):
    await process(body)


async def worker(url):
    session = aioboto3.Session()
    async with session.client("sqs") as sqs:
        while True:
            resp = await sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)
            for m in resp.get("Messages", []):
{body}
                await sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
"""


def test_a_handler_timeout_longer_than_the_window_fires():
    found = findings(WAIT_FOR.replace("{body}", '                await asyncio.wait_for(handle(m["Body"]), timeout=120)'))
    assert [(c, line) for c, line, _ in found] == [("RTY502", 14)]
    message = found[0][2]
    assert ("the handler timeout `asyncio.wait_for(..., timeout=120)` (line 16) lets the handler hold the message for up to "
            "2 min: longer than the visibility timeout of 30 s") in message
    found = findings(WAIT_FOR.replace("{body}", '                async with asyncio.timeout(90):\n'
                                                '                    await handle(m["Body"])'))
    assert [c for c, _, _ in found] == ["RTY502"] and "`asyncio.timeout(90)`" in found[0][2]


@pytest.mark.parametrize("body", [
    '                await asyncio.wait_for(handle(m["Body"]), timeout=25)',  # shorter than the window
    '                await asyncio.wait_for(refresh_cache(), timeout=120)',  # not the message's work
    '                await asyncio.wait_for(handle(m["Body"]), timeout=limit())',  # not known
])
def test_a_handler_timeout_look_alikes_are_silent(body):
    assert findings(WAIT_FOR.replace("{body}", body)) == []


TRAILING = """
import json
import time
import boto3

sqs = boto3.client("sqs")


def worker(url):
    while True:
        resp = sqs.receive_message(QueueUrl=url, VisibilityTimeout={window})
        for m in resp.get("Messages", []):
            for attempt in range(6):
                try:
                    post_order(json.loads(m["Body"]))
                    break
                except ConnectionError:
{handler}
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
"""


def _slept(handler: str) -> float:
    """Run the retry loop of :data:`TRAILING` against an operation that always fails; the seconds it sleeps."""
    slept: list = []
    loop = ("for attempt in range(6):\n    try:\n        post_order(json.loads(m['Body']))\n        break\n"
            "    except ConnectionError:\n" + textwrap.indent(textwrap.dedent(handler), "        ") + "\n")

    def post_order(order):
        raise ConnectionError

    namespace = {"json": __import__("json"), "m": {"Body": "{}"}, "post_order": post_order,
                 "time": type("T", (), {"sleep": staticmethod(slept.append)})}
    try:
        exec(compile(loop, "loop.py", "exec"), namespace)  # noqa: S102 - the test's own source
    except ConnectionError:
        pass
    return sum(slept)


def test_a_range_loop_that_sleeps_after_its_last_failure_counts_that_sleep():
    handler = "                    time.sleep(min(20, 2 ** attempt))"
    assert _slept(handler) == 51  # 1 + 2 + 4 + 8 + 16 + 20: the 6th failure sleeps too
    found = findings(TRAILING.replace("{window}", "40").replace("{handler}", handler))
    assert [c for c, _, _ in found] == ["RTY502"]
    assert "can wait 51 s in all (with the 20 s it also sleeps after its last failure)" in found[0][2]


@pytest.mark.parametrize("handler, slept", [
    ("                    if attempt < 5:\n                        time.sleep(min(20, 2 ** attempt))", 31),
    ("                    if attempt == 5:\n                        raise\n                    time.sleep(min(20, 2 ** attempt))", 31),
])
def test_a_loop_that_skips_the_last_sleep_is_counted_without_it(handler, slept):
    assert _slept(handler) == slept
    assert findings(TRAILING.replace("{window}", "40").replace("{handler}", handler)) == []  # 31 s < 40 s


HELPER = """
import json
import time
import boto3

sqs = boto3.client("sqs")


def handle(body):
    for attempt in range(6):
        try:
            return post_order(body)
        except ConnectionError:
            time.sleep(min(20, 2 ** attempt))
    raise RuntimeError("gave up")


def worker(url):
    while True:
        resp = sqs.receive_message(QueueUrl=url, VisibilityTimeout=20)
        for m in resp.get("Messages", []):
{body}
"""


def test_a_hand_written_retry_in_a_helper_called_after_the_receive_is_followed():
    body = '            handle(json.loads(m["Body"]))\n            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])'
    for narrowing in (True, False):
        found = findings(HELPER.replace("{body}", body), narrowing=narrowing)
        assert [(c, line) for c, line, _ in found] == [("RTY502", 20)]
        assert ("`handle()` (line 22) runs its `for … in range(6)` retry loop (line 10), which can wait 51 s in all "
                "(with the 20 s it also sleeps after its last failure): longer than the visibility timeout of 20 s") in found[0][2]


@pytest.mark.parametrize("body", [
    '            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])\n            handle(json.loads(m["Body"]))',
    '            store(json.loads(m["Body"]))\n            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])',
    '            other.handle(json.loads(m["Body"]))\n            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])',
])
def test_a_helper_retry_look_alikes_are_silent(body):
    assert findings(HELPER.replace("{body}", body)) == []


# ---------------------------------------------------------------- RTY502: kombu's redis default window (audit, minor)

REDIS_DEFAULT = """
import os
from celery import Celery

app = Celery("shop", broker=BROKER)
{conf}

@app.task(acks_late=True, time_limit=LIMIT)
def export(report_id):
    build(report_id)
"""


def test_the_redis_transport_default_is_kombus():
    import kombu.transport.redis as redis

    assert redis.Channel.visibility_timeout == visibility.REDIS_VISIBILITY_DEFAULT == 3600


def test_a_celery_app_on_redis_without_a_visibility_timeout_uses_kombus_default():
    code = REDIS_DEFAULT.replace("BROKER", '"redis://localhost:6379/0"').replace("LIMIT", "7200").replace("{conf}", "")
    for narrowing in (True, False):
        found = findings(code, narrowing=narrowing)
        assert [(c, line) for c, line, _ in found] == [("RTY502", 8)]
        assert ("with `acks_late` it may run for up to `time_limit` = 2 h before its message is acked: longer than the "
                "redis transport's default `visibility_timeout` of 1 h") in found[0][2]


@pytest.mark.parametrize("broker, limit, conf", [
    ('"redis://localhost:6379/0"', "1800", ""),  # under the hour
    ('"amqp://guest@localhost//"', "7200", ""),  # RabbitMQ: no visibility timeout
    ('os.environ["BROKER_URL"]', "7200", ""),  # not known
    ('"redis://localhost:6379/0"', "7200", 'app.conf.broker_transport_options = {"visibility_timeout": 10800}'),
    ('"redis://localhost:6379/0"', "7200", "app.conf.broker_transport_options = TRANSPORT_OPTIONS"),  # not readable
])
def test_redis_default_look_alikes_are_silent(broker, limit, conf):
    code = REDIS_DEFAULT.replace("BROKER", broker).replace("LIMIT", limit).replace("{conf}", conf)
    assert findings(code) == []
    assert findings(code, narrowing=False) == []


# ---------------------------------------------------------------- RTY503: SQLAlchemy ORM creates (audit, minor)

ORM = """
import tenacity
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

engine = create_engine("postgresql://shop")
SessionLocal = sessionmaker(bind=engine)


@tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=10),
                retry=tenacity.retry_if_exception_type(OperationalError))
def add_order(order):
{body}
"""


@pytest.mark.parametrize("body", [
    "    with Session(engine) as session:\n        session.add(Order(**order))\n        session.commit()",
    "    session = SessionLocal()\n    session.add(Order(customer=order['customer'], total=order['total']))\n    session.commit()",
])
def test_an_orm_add_and_commit_in_a_retry_is_a_create(body):
    for narrowing in (True, False):
        found = findings(ORM.replace("{body}", body), narrowing=narrowing)
        assert [c for c, _, _ in found] == ["RTY503"], body
        assert "SQLAlchemy `session.add(Order(" in found[0][2] and "+ `commit()` is retried with no stable idempotency key" in found[0][2]


@pytest.mark.parametrize("body", [
    # the transaction block ends the attempt: a failed attempt rolls the row back
    "    with Session(engine) as session, session.begin():\n        session.add(Order(**order))",
    # an object loaded before: an update
    "    with Session(engine) as session:\n        row = session.get(Order, order['id'])\n        session.add(row)\n        session.commit()",
    # merge looks the row up by its primary key
    "    with Session(engine) as session:\n        session.merge(Order(**order))\n        session.commit()",
    # no commit in the attempt
    "    with Session(engine) as session:\n        session.add(Order(**order))\n        session.flush()",
    # not a session
    "    seen = set()\n    seen.add(Order(**order))\n    seen.commit()",
])
def test_orm_look_alikes_are_silent(body):
    assert findings(ORM.replace("{body}", body)) == []


REQUEST_TIMEOUT = """
import json
import boto3
import requests

sqs = boto3.client("sqs")


def consume(url):
    while True:
        resp = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)
        for m in resp.get("Messages", []):
            requests.post("https://reports.example/api/render", json={payload}, timeout={timeout})
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
"""


def test_a_request_of_the_handler_that_may_wait_longer_than_the_window_fires():
    found = findings(REQUEST_TIMEOUT.replace("{payload}", 'json.loads(m["Body"])').replace("{timeout}", "300"))
    assert [(c, line) for c, line, _ in found] == [("RTY502", 11)]
    assert ("`requests.post(..., timeout=300)` (line 13) may wait up to 5 min for its answer while the handler holds the "
            "message: longer than the visibility timeout of 30 s") in found[0][2]


@pytest.mark.parametrize("payload, timeout", [
    ('json.loads(m["Body"])', "10"),  # under the window
    ('json.loads(m["Body"])', "(3.05, 27)"),  # a (connect, read) pair: not judged
    ('{"ping": 1}', "300"),  # not the message's work
])
def test_request_timeout_look_alikes_are_silent(payload, timeout):
    assert findings(REQUEST_TIMEOUT.replace("{payload}", payload).replace("{timeout}", timeout)) == []


@pytest.mark.parametrize("statuses, reported", [("(429,)", False), ("(429, 500, 503)", True)])
def test_a_post_sent_again_only_after_a_429_applied_nothing(statuses, reported):
    """apprise's Revolt plugin: the message is POSTed again only after a 429, which the server
    answers without applying the request; a 500 may come after it applied it (RTY503)."""
    code = f"""
    import random, time, requests

    def send(payload):
        for attempt in range(5):
            response = requests.post("https://api.shop.example/orders", json=payload)
            if response.status_code in {statuses}:
                time.sleep(random.uniform(0, 2 ** attempt))
                continue
            return response
    """
    assert bool(findings(code, select=("RTY503",))) is reported

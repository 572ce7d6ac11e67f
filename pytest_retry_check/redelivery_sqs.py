"""SQS requests of a real botocore (or boto3) client answered by a
:class:`~pytest_retry_check.redelivery.FakeBroker`.

A ``before-send`` handler on the client answers each request with the JSON body AWS would send,
so botocore validates the parameters, serialises, signs and parses as it does against AWS; errors
come back as botocore's own ``ClientError`` with SQS's codes (``ReceiptHandleIsInvalid``,
``MessageNotInflight``, ``QueueDoesNotExist``, ...). No network and no real credentials.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from .redelivery import FakeBroker, FakeQueue, QueueError

ACCOUNT = "000000000000"

#: The query-protocol code botocore reports for a JSON error type (the awsQueryCompatible header).
_QUERY_CODES = {
    "QueueDoesNotExist": "AWS.SimpleQueueService.NonExistentQueue",
    "MessageNotInflight": "AWS.SimpleQueueService.MessageNotInflight",
    "UnsupportedOperation": "AWS.SimpleQueueService.UnsupportedOperation",
    "TooManyEntriesInBatchRequest": "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
}


class _SqsError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **kwargs: Any) -> Any:
        yield self._data


class SqsEndpoint:
    """The SQS JSON API over a broker's queues."""

    def __init__(self, broker: FakeBroker, region: str) -> None:
        self.broker = broker
        self.region = region

    def url(self, name: str) -> str:
        return f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT}/{name}"

    def arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{ACCOUNT}:{name}"

    def _queue(self, params: Dict[str, Any]) -> FakeQueue:
        url = params.get("QueueUrl") or ""
        name = url.rstrip("/").rsplit("/", 1)[-1]
        queue = self.broker.get(name)
        if queue is None:
            raise _SqsError("QueueDoesNotExist", f"The specified queue does not exist: {url}")
        return queue

    # -- dispatch ---------------------------------------------------------------------------
    def handle(self, request: Any, **kwargs: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else target
        operation = target.rsplit(".", 1)[-1]
        body = request.body or b"{}"
        if hasattr(body, "read"):
            body = body.read()
        params = json.loads(body or b"{}")
        status, headers = 200, {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": str(uuid.uuid4())}
        try:
            method = getattr(self, f"op_{operation}", None)
            if method is None:
                raise _SqsError("UnsupportedOperation", f"the fake queue does not implement {operation}")
            answer = method(params)
        except QueueError as exc:
            status, answer = 400, self._error(exc.code, str(exc), headers)
        except _SqsError as exc:
            status, answer = 400, self._error(exc.code, str(exc), headers)
        return AWSResponse(request.url, status, headers, _Body(json.dumps(answer).encode()))

    def _error(self, code: str, message: str, headers: Dict[str, str]) -> Dict[str, Any]:
        headers["x-amzn-query-error"] = f"{_QUERY_CODES.get(code, code)};Sender"
        return {"__type": f"com.amazonaws.sqs#{code}", "message": message}

    # -- queues -----------------------------------------------------------------------------
    def op_CreateQueue(self, params: Dict[str, Any]) -> Dict[str, Any]:
        name = params["QueueName"]
        queue = self.broker.get(name) or self.broker(name)
        self._set_attributes(queue, params.get("Attributes") or {})
        return {"QueueUrl": self.url(name)}

    def op_GetQueueUrl(self, params: Dict[str, Any]) -> Dict[str, Any]:
        name = params["QueueName"]
        if self.broker.get(name) is None:
            raise _SqsError("QueueDoesNotExist", f"The specified queue {name} does not exist.")
        return {"QueueUrl": self.url(name)}

    def op_ListQueues(self, params: Dict[str, Any]) -> Dict[str, Any]:
        prefix = params.get("QueueNamePrefix") or ""
        return {"QueueUrls": [self.url(name) for name in self.broker.queues if name.startswith(prefix)]}

    def op_DeleteQueue(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        self.broker.queues.pop(queue.name, None)
        return {}

    def op_PurgeQueue(self, params: Dict[str, Any]) -> Dict[str, Any]:
        self._queue(params).purge()
        return {}

    def op_SetQueueAttributes(self, params: Dict[str, Any]) -> Dict[str, Any]:
        self._set_attributes(self._queue(params), params.get("Attributes") or {})
        return {}

    def _set_attributes(self, queue: FakeQueue, attributes: Dict[str, str]) -> None:
        if "VisibilityTimeout" in attributes:
            queue.visibility_timeout = float(_int(attributes["VisibilityTimeout"], "VisibilityTimeout", 0, 43200))
        if "DelaySeconds" in attributes:
            queue.delay = float(_int(attributes["DelaySeconds"], "DelaySeconds", 0, 900))
        if attributes.get("RedrivePolicy"):
            policy = json.loads(attributes["RedrivePolicy"])
            target = str(policy.get("deadLetterTargetArn", ""))
            dlq = self.broker.get(target.rsplit(":", 1)[-1])
            if dlq is None:
                raise _SqsError("InvalidParameterValue", f"Value {target} for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.")
            queue.max_receive_count = _int(policy.get("maxReceiveCount"), "maxReceiveCount", 1, 1000)
            queue.dead_letter_queue = dlq

    def op_GetQueueAttributes(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        attributes = {
            "QueueArn": self.arn(queue.name),
            "ApproximateNumberOfMessages": str(queue.visible),
            "ApproximateNumberOfMessagesNotVisible": str(queue.in_flight),
            "ApproximateNumberOfMessagesDelayed": str(len(queue) - queue.visible - queue.in_flight),
            "VisibilityTimeout": str(int(queue.visibility_timeout)),
            "DelaySeconds": str(int(queue.delay)),
        }
        if queue.max_receive_count is not None and queue.dead_letter_queue is not None:
            attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": self.arn(queue.dead_letter_queue.name), "maxReceiveCount": queue.max_receive_count})
        names = params.get("AttributeNames") or []
        if "All" not in names:
            attributes = {k: v for k, v in attributes.items() if k in names}
        return {"Attributes": attributes}

    # -- messages ---------------------------------------------------------------------------
    def op_SendMessage(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        return self._send(queue, params)

    def _send(self, queue: FakeQueue, params: Dict[str, Any]) -> Dict[str, Any]:
        body = params["MessageBody"]
        delay = params.get("DelaySeconds")
        attributes = {"MessageAttributes": params["MessageAttributes"]} if params.get("MessageAttributes") else {}
        mid = queue.send(body, attributes=attributes, delay=None if delay is None else float(_int(delay, "DelaySeconds", 0, 900)), message_id=str(uuid.uuid4()))
        return {"MessageId": mid, "MD5OfMessageBody": _md5(body)}

    def op_SendMessageBatch(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        entries = params.get("Entries") or []
        _batch_size(entries)
        return {"Successful": [dict(self._send(queue, entry), Id=entry["Id"]) for entry in entries], "Failed": []}

    def op_ReceiveMessage(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        count = _int(params.get("MaxNumberOfMessages", 1), "MaxNumberOfMessages", 1, 10)
        wait = _int(params.get("WaitTimeSeconds", 0), "WaitTimeSeconds", 0, 20)
        visibility = params.get("VisibilityTimeout")
        got = queue.receive(count, visibility_timeout=None if visibility is None else float(_int(visibility, "VisibilityTimeout", 0, 43200)), wait_time=float(wait))
        wanted = set(params.get("AttributeNames") or []) | set(params.get("MessageSystemAttributeNames") or [])
        wanted_custom = set(params.get("MessageAttributeNames") or [])
        clock = queue.clock
        messages = []
        for delivery in got:
            message: Dict[str, Any] = {"MessageId": delivery.message_id, "ReceiptHandle": delivery.receipt_handle, "MD5OfBody": _md5(delivery.body), "Body": delivery.body}
            system = {
                "ApproximateReceiveCount": str(delivery.receive_count),
                "ApproximateFirstReceiveTimestamp": str(int(clock.at_epoch(delivery.first_received_at or 0.0) * 1000)),
                "SentTimestamp": str(int(clock.at_epoch(queue._messages[delivery.message_id].sent_at) * 1000)),
            }
            source = delivery.attributes.get("dead_letter_source")
            if source:
                system["DeadLetterQueueSourceArn"] = self.arn(source)
            chosen = system if "All" in wanted else {k: v for k, v in system.items() if k in wanted}
            if chosen:
                message["Attributes"] = chosen
            custom = delivery.attributes.get("MessageAttributes") or {}
            if custom and wanted_custom:
                message["MessageAttributes"] = custom if ("All" in wanted_custom or ".*" in wanted_custom) else {k: v for k, v in custom.items() if k in wanted_custom}
            messages.append(message)
        return {"Messages": messages} if messages else {}

    def op_DeleteMessage(self, params: Dict[str, Any]) -> Dict[str, Any]:
        self._queue(params).delete(params["ReceiptHandle"])
        return {}

    def op_DeleteMessageBatch(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        entries = params.get("Entries") or []
        _batch_size(entries)
        return self._each(entries, lambda entry: queue.delete(entry["ReceiptHandle"]))

    def op_ChangeMessageVisibility(self, params: Dict[str, Any]) -> Dict[str, Any]:
        self._queue(params).change_visibility(params["ReceiptHandle"], float(_int(params["VisibilityTimeout"], "VisibilityTimeout", 0, 43200)))
        return {}

    def op_ChangeMessageVisibilityBatch(self, params: Dict[str, Any]) -> Dict[str, Any]:
        queue = self._queue(params)
        entries = params.get("Entries") or []
        _batch_size(entries)
        return self._each(entries, lambda entry: queue.change_visibility(entry["ReceiptHandle"], float(_int(entry.get("VisibilityTimeout", 0), "VisibilityTimeout", 0, 43200))))

    def _each(self, entries: List[Dict[str, Any]], action: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
        ok: List[Dict[str, Any]] = []
        failed: List[Dict[str, Any]] = []
        for entry in entries:
            try:
                action(entry)
                ok.append({"Id": entry["Id"]})
            except (QueueError, _SqsError) as exc:
                failed.append({"Id": entry["Id"], "SenderFault": True, "Code": getattr(exc, "code", "InvalidParameterValue"), "Message": str(exc)})
        return {"Successful": ok, "Failed": failed}


def _md5(body: Any) -> str:
    return hashlib.md5(str(body).encode("utf-8")).hexdigest()


def _int(value: Any, name: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _SqsError("InvalidParameterValue", f"Value {value!r} for parameter {name} is invalid.") from None
    if not low <= number <= high:
        raise _SqsError("InvalidParameterValue", f"Value {value} for parameter {name} is invalid. Reason: Must be between {low} and {high}.")
    return number


def _batch_size(entries: List[Any]) -> None:
    if not entries:
        raise _SqsError("EmptyBatchRequest", "There should be at least one entry in the request.")
    if len(entries) > 10:
        raise _SqsError("TooManyEntriesInBatchRequest", f"Maximum number of entries per request are 10. You have sent {len(entries)}.")


def attach(broker: FakeBroker, client: Any) -> Callable[[], None]:
    """Answer ``client``'s SQS requests from ``broker``; returns the undo."""
    service = getattr(client.meta.service_model, "service_name", "")
    if service != "sqs":
        raise TypeError(f"attach_sqs needs an SQS client, got a {service or type(client).__name__} client")
    endpoint = SqsEndpoint(broker, client.meta.region_name or "us-east-1")
    unique = f"retry-check-fake-sqs-{id(broker)}-{id(client)}"
    client.meta.events.register_first("before-send.sqs", endpoint.handle, unique_id=unique)
    return lambda: client.meta.events.unregister("before-send.sqs", unique_id=unique)


def make_client(broker: FakeBroker, region: str, kwargs: Dict[str, Any]) -> Any:
    import botocore.session

    kwargs.setdefault("aws_access_key_id", "testing")
    kwargs.setdefault("aws_secret_access_key", "testing")
    client = botocore.session.Session().create_client("sqs", region_name=region, **kwargs)
    broker._undo.append(attach(broker, client))
    return client


def queue_url(client: Any, name: str) -> Optional[str]:
    return f"https://sqs.{client.meta.region_name}.amazonaws.com/{ACCOUNT}/{name}"


__all__: Tuple[str, ...] = ("SqsEndpoint", "attach", "make_client")

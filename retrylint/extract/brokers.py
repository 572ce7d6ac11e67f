"""What message brokers' client calls do: publish, receive, subscribe, move.

One table per broker family, keyed by method name, says which arguments name the queue
and which carry the message (body, headers, attributes). A call is recognised when its
receiver traces back (through assignments, ``with`` targets, ``self`` attributes and
parameter annotations) to a client of that family, found by qualified name
(``boto3.client("sqs")``, ``pika.BlockingConnection(...).channel()``,
``confluent_kafka.Producer``, ``redis.Redis``, ``pubsub_v1.PublisherClient``,
``ServiceBusClient.get_queue_sender``); or, when the receiver is a parameter
(``def on_message(ch, method, properties, body)``), when the method is that family's
and the module imports the family's package; SQS calls are also recognised by their
keywords (``QueueUrl=``, ``SourceArn=``).

Families: ``sqs`` (boto3, aiobotocore, aioboto3), ``rabbitmq`` (pika, aio-pika),
``kombu``, ``celery`` (tasks: ``delay``/``apply_async``/``send_task``), ``kafka``
(confluent-kafka, kafka-python, aiokafka), ``redis`` (lists and streams), ``pubsub``
(Google Pub/Sub), ``servicebus`` (Azure Service Bus).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

import libcst as cst

from ..syntax import call_args, dotted_name, last_name, number, unwrap_await, walk
from .context import ModuleContext
from .queue_names import QueueNames, QueueRef, UNKNOWN_QUEUE

SQS = "sqs"
RABBITMQ = "rabbitmq"
KOMBU = "kombu"
CELERY = "celery"
KAFKA = "kafka"
REDIS = "redis"
PUBSUB = "pubsub"
SERVICEBUS = "servicebus"

#: Qualified-name prefixes (and import paths) of each family's client libraries.
PACKAGES: Dict[str, Tuple[str, ...]] = {
    SQS: ("boto3", "botocore", "aiobotocore", "aioboto3"),
    RABBITMQ: ("pika", "aio_pika", "aiormq"),
    KOMBU: ("kombu",),
    CELERY: ("celery",),
    KAFKA: ("confluent_kafka", "kafka", "aiokafka"),
    REDIS: ("redis", "aioredis"),
    PUBSUB: ("google.cloud.pubsub_v1", "google.cloud.pubsub"),
    SERVICEBUS: ("azure.servicebus",),
}

#: A client we know is not a message broker's.
OTHER = "other"
_NOT_BROKERS = frozenset({"list", "dict", "set", "collections.deque", "deque"})
_NOT_BROKER_PACKAGES = ("queue", "asyncio", "multiprocessing", "janus", "collections", "logging", "socket", "requests",
                        "httpx", "aiohttp", "smtplib")

# Roles of a call.
PUBLISH = "publish"  # sends a message to a destination
RECEIVE = "receive"  # returns messages (one, a batch, or a response holding them)
STREAM = "stream"  # returns an iterable of messages that goes on as long as the queue does
SUBSCRIBE = "subscribe"  # registers a callback that runs for every message
MOVE = "move"  # the broker moves messages from one queue to another

#: (keyword, position) of an argument; position None: keyword only.
Arg = Tuple[str, Optional[int]]


@dataclass(frozen=True)
class Spec:
    role: str
    #: Arguments naming the queue: the destination of a publish, the source otherwise.
    queue: Tuple[Arg, ...] = ()
    #: The receiver object names the queue (``queue.send_message``, ``sender.send_messages``).
    queue_from_receiver: bool = False
    body: Tuple[Arg, ...] = ()
    attributes: Tuple[Arg, ...] = ()
    #: Every positional argument from this index on is body (redis ``lpush(name, *values)``).
    body_rest: Optional[int] = None
    #: Keywords other than these are message attributes (Pub/Sub ``publish(topic, data, **attrs)``).
    keyword_attributes_except: Optional[FrozenSet[str]] = None
    callback: Optional[Arg] = None
    #: RECEIVE: the argument that bounds how many messages one call returns …
    batch: Optional[Arg] = None
    #: … and whether one call returns a bounded number when it is not given.
    bounded_by_default: bool = True
    #: MOVE: the destination and the rate argument.
    to: Tuple[Arg, ...] = ()
    rate: Optional[Arg] = None


_SQS_BODY = (("MessageBody", None),)
_SQS_ATTRIBUTES = (("MessageAttributes", None), ("MessageSystemAttributes", None))

METHODS: Dict[str, Dict[str, Spec]] = {
    SQS: {
        "send_message": Spec(PUBLISH, (("QueueUrl", None),), True, _SQS_BODY, _SQS_ATTRIBUTES),
        "send_message_batch": Spec(PUBLISH, (("QueueUrl", None),), True, (("Entries", None),)),
        "send_messages": Spec(PUBLISH, (), True, (("Entries", None),)),
        "receive_message": Spec(RECEIVE, (("QueueUrl", None),), True, batch=("MaxNumberOfMessages", None)),
        "receive_messages": Spec(RECEIVE, (), True, batch=("MaxNumberOfMessages", None)),
        "start_message_move_task": Spec(
            MOVE, (("SourceArn", None),), to=(("DestinationArn", None),), rate=("MaxNumberOfMessagesPerSecond", None)
        ),
    },
    RABBITMQ: {
        "basic_publish": Spec(PUBLISH, (("exchange", 0), ("routing_key", 1)), body=(("body", 2),), attributes=(("properties", 3),)),
        "basic_consume": Spec(SUBSCRIBE, (("queue", 0),), callback=("on_message_callback", 1)),
        "basic_get": Spec(RECEIVE, (("queue", 0),)),
        # pika BlockingChannel.consume(queue) is a generator; aio-pika Queue.consume(callback) subscribes.
        "consume": Spec(STREAM, (("queue", 0),)),
        "publish": Spec(PUBLISH, (("routing_key", 1),), True, body=(("message", 0),)),
        "get": Spec(RECEIVE, (), True),
        "iterator": Spec(STREAM, (), True),
    },
    KOMBU: {
        "publish": Spec(
            PUBLISH, (("routing_key", None), ("exchange", None)), body=(("body", 0),), attributes=(("headers", None),)
        ),
        "put": Spec(PUBLISH, (), True, body=(("message", 0),), attributes=(("headers", None),)),
        "get": Spec(RECEIVE, (), True),
        "get_nowait": Spec(RECEIVE, (), True),
        "Consumer": Spec(SUBSCRIBE, (("queues", 1),), callback=("callbacks", 3)),
        "register_callback": Spec(SUBSCRIBE, (), True, callback=("callback", 0)),
    },
    KAFKA: {
        "produce": Spec(PUBLISH, (("topic", 0),), body=(("value", 1),), attributes=(("headers", None),)),
        "send": Spec(PUBLISH, (("topic", 0),), body=(("value", 1),), attributes=(("headers", None),)),
        "send_and_wait": Spec(PUBLISH, (("topic", 0),), body=(("value", 1),), attributes=(("headers", None),)),
        "poll": Spec(RECEIVE, (), True),
        "consume": Spec(RECEIVE, (), True, batch=("num_messages", 0)),
        "getone": Spec(RECEIVE, (), True),
        "getmany": Spec(RECEIVE, (), True),
    },
    REDIS: {
        "lpush": Spec(PUBLISH, (("name", 0),), body_rest=1),
        "rpush": Spec(PUBLISH, (("name", 0),), body_rest=1),
        "lpushx": Spec(PUBLISH, (("name", 0),), body_rest=1),
        "rpushx": Spec(PUBLISH, (("name", 0),), body_rest=1),
        "xadd": Spec(PUBLISH, (("name", 0),), body=(("fields", 1),)),
        "brpop": Spec(RECEIVE, (("keys", 0),)),
        "blpop": Spec(RECEIVE, (("keys", 0),)),
        "rpop": Spec(RECEIVE, (("name", 0),), batch=("count", 1)),
        "lpop": Spec(RECEIVE, (("name", 0),), batch=("count", 1)),
        "lrange": Spec(RECEIVE, (("name", 0),), batch=("end", 2)),
        "xrange": Spec(RECEIVE, (("name", 0),), batch=("count", 3), bounded_by_default=False),
        "xread": Spec(RECEIVE, (("streams", 0),), batch=("count", 1), bounded_by_default=False),
        "xreadgroup": Spec(RECEIVE, (("streams", 2),), batch=("count", 3), bounded_by_default=False),
        "lmove": Spec(MOVE, (("first_list", 0),), to=(("second_list", 1),)),
        "blmove": Spec(MOVE, (("first_list", 0),), to=(("second_list", 1),)),
        "rpoplpush": Spec(MOVE, (("src", 0),), to=(("dst", 1),)),
        "brpoplpush": Spec(MOVE, (("src", 0),), to=(("dst", 1),)),
    },
    PUBSUB: {
        "publish": Spec(
            PUBLISH,
            (("topic", 0),),
            body=(("data", 1),),
            keyword_attributes_except=frozenset({"topic", "data", "ordering_key", "retry", "timeout"}),
        ),
        "subscribe": Spec(SUBSCRIBE, (("subscription", 0),), callback=("callback", 1)),
        "pull": Spec(RECEIVE, (("subscription", None),), batch=("max_messages", None)),
    },
    SERVICEBUS: {
        "send_messages": Spec(PUBLISH, (), True, body=(("message", 0),)),
        "schedule_messages": Spec(PUBLISH, (), True, body=(("messages", 0),)),
        "receive_messages": Spec(RECEIVE, (), True, batch=("max_message_count", 0)),
        "peek_messages": Spec(RECEIVE, (), True, batch=("max_message_count", 0)),
    },
}

#: Calls that create an object naming a queue, and the arguments that name it.
OBJECT_QUEUE_ARGS: Dict[str, Tuple[Arg, ...]] = {
    "get_queue_by_name": (("QueueName", None),),
    "Queue": (("url", 0), ("name", 0)),
    "declare_queue": (("name", 0),),
    "get_queue": (("name", 0),),
    "declare_exchange": (("name", 0),),
    "get_exchange": (("name", 0),),
    "Exchange": (("name", 0),),
    "SimpleQueue": (("name", 0),),
    "SimpleBuffer": (("name", 0),),
    "get_queue_receiver": (("queue_name", 0), ("sub_queue", None)),
    "get_subscription_receiver": (("topic_name", 0), ("subscription_name", 1), ("sub_queue", None)),
    "get_queue_sender": (("queue_name", 0),),
    "get_topic_sender": (("topic_name", 0),),
}
#: Consumers named by every positional argument (the topics).
_TOPIC_CONSUMERS = frozenset({"KafkaConsumer", "AIOKafkaConsumer"})
#: Objects that, iterated, yield messages for as long as the queue has them (or forever),
#: with the keyword that makes the iteration stop after a quiet time.
ITERABLE_CONSUMERS: Dict[str, str] = {
    "KafkaConsumer": "consumer_timeout_ms",
    "AIOKafkaConsumer": "",
    "get_queue_receiver": "max_wait_time",
    "get_subscription_receiver": "max_wait_time",
    "iterator": "",
    "consume": "inactivity_timeout",
}

#: Types of received messages (their last qualified-name segment, in a family's package).
_MESSAGE_TYPE = re.compile(r"Message$|Record$|Deliver")
_ACKS = frozenset({"ack", "nack", "reject", "process", "modify_ack_deadline", "requeue"})
_SETTLES = frozenset({"complete_message", "abandon_message", "defer_message", "renew_message_lock", "commit"})

CELERY_TASK_METHODS = frozenset({"delay", "apply_async", "send_task"})
_CELERY_DECORATORS = frozenset({"celery.shared_task", "celery.task", "celery.app.shared_task"})

#: Every method name in the tables: the words narrowing and the extractor look for.
ALL_METHODS: FrozenSet[str] = frozenset(
    {m for table in METHODS.values() for m in table} | CELERY_TASK_METHODS | {"subscribe"}
)
PUBLISH_METHODS: FrozenSet[str] = frozenset(
    {m for table in METHODS.values() for m, s in table.items() if s.role in (PUBLISH, MOVE)} | CELERY_TASK_METHODS
)
#: Calls that create clients or queue objects (kept by narrowing so ``self.x`` can be traced).
FACTORY_NAMES: FrozenSet[str] = frozenset(OBJECT_QUEUE_ARGS) | _TOPIC_CONSUMERS | frozenset(
    {
        "client", "resource", "create_client", "Session", "get_queue_url", "channel", "connect", "connect_robust",
        "BlockingConnection", "SelectConnection", "Connection", "Producer", "Consumer", "SerializingProducer",
        "DeserializingConsumer", "KafkaProducer", "AIOKafkaProducer", "Redis", "StrictRedis", "from_url",
        "RedisCluster", "PublisherClient", "SubscriberClient", "ServiceBusClient", "from_connection_string",
        "topic_path", "subscription_path", "Celery",
    }
)

# Method names too common to trust from the import alone: the receiver's name must say it
# ("" : never from the import alone).
_GENERIC = {"send": "produc", "publish": "publish|produc|exchange|pub", "put": "queue|simple|buffer",
            "get": "queue|simple|buffer", "poll": "consum", "consume": "consum|queue|channel|ch$",
            "getone": "", "getmany": "", "Consumer": "", "iterator": "queue"}


@dataclass
class BrokerCall:
    """One recognised client call."""

    call: cst.Call
    broker: str
    role: str
    method: str
    #: The destination of a publish or a move; the source of a receive, stream or subscription.
    queue: QueueRef = UNKNOWN_QUEUE
    body: Tuple[cst.BaseExpression, ...] = ()
    attributes: Tuple[cst.BaseExpression, ...] = ()
    #: Pub/Sub attributes passed as keywords.
    attribute_keywords: Tuple[str, ...] = ()
    callbacks: Tuple[cst.BaseExpression, ...] = ()
    #: RECEIVE: does one call return a bounded number of messages?
    bounded: bool = True
    #: MOVE: where the messages go, and whether a rate is given.
    destination: QueueRef = UNKNOWN_QUEUE
    rate_given: Optional[bool] = None
    #: A ``**kwargs`` we cannot read is passed.
    opaque: bool = False

    @property
    def description(self) -> str:
        return f"{_FAMILY_LABEL.get(self.broker, self.broker)} `{self.method}`"


_FAMILY_LABEL = {SQS: "SQS", RABBITMQ: "RabbitMQ", KOMBU: "kombu", CELERY: "celery", KAFKA: "Kafka",
                 REDIS: "redis", PUBSUB: "Pub/Sub", SERVICEBUS: "Service Bus"}


class Brokers:
    """Recognises the broker calls of one module."""

    def __init__(self, ctx: ModuleContext, names: QueueNames) -> None:
        self.ctx = ctx
        self.names = names
        self.imported = _imported_families(ctx.module)
        self._family_cache: Dict[int, Optional[str]] = {}
        self._tasks: Optional[Dict[str, cst.FunctionDef]] = None

    # ------------------------------------------------------------ recognition

    def recognise(self, call: cst.Call) -> Optional[BrokerCall]:
        method = last_name(call.func)
        if method is None or method not in ALL_METHODS:
            return None
        if method in CELERY_TASK_METHODS:
            return self._celery(call, method)
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        family = self._family(call, method, receiver)
        if family is None:
            return None
        spec = METHODS.get(family, {}).get(method)
        if family == RABBITMQ and method == "consume" and self._first_is_callable(call):
            spec = Spec(SUBSCRIBE, (), True, callback=("callback", 0))  # aio-pika Queue.consume(callback)
        if family == KAFKA and method == "subscribe":
            return None  # binds topics to a consumer: read by queue_of_object
        if family == RABBITMQ and method == "basic_consume" and self._first_is_callable(call):
            spec = Spec(SUBSCRIBE, (("queue", None),), callback=("consumer_callback", 0))  # pika 0.x
        if spec is None:
            return None
        return self._build(call, family, method, spec, receiver)

    def _build(self, call: cst.Call, family: str, method: str, spec: Spec, receiver: Optional[cst.BaseExpression]) -> BrokerCall:
        positional, keywords = call_args(call)
        queue_exprs = _args(call, spec.queue)
        queue = self.names.classify_all(queue_exprs)
        if not queue_exprs and spec.queue_from_receiver and receiver is not None:
            queue = self.queue_of_object(receiver)
        elif family in (RABBITMQ, KOMBU) and spec.role == PUBLISH and receiver is not None and method in ("publish", "put"):
            # aio-pika exchange.publish(msg, routing_key=...): the exchange object is part of the address.
            exchange = self.queue_of_object(receiver)
            if exchange.known:
                queue = self.names.classify_all(queue_exprs + [n for n in [self._object_call(receiver)] if n is not None])
        body: List[cst.BaseExpression] = list(_args(call, spec.body))
        if spec.body_rest is not None:
            body += positional[spec.body_rest:]
        attribute_keywords: Tuple[str, ...] = ()
        if spec.keyword_attributes_except is not None:
            attribute_keywords = tuple(k for k in keywords if k not in spec.keyword_attributes_except)
        callbacks: Tuple[cst.BaseExpression, ...] = ()
        if spec.callback is not None:
            callback = _arg(call, spec.callback)
            if family == KOMBU and callback is None:
                callback = keywords.get("on_message")
            if isinstance(callback, (cst.List, cst.Tuple)):
                callbacks = tuple(e.value for e in callback.elements)
            elif callback is not None:
                callbacks = (callback,)
        bounded = True
        if spec.batch is not None:
            count = _arg(call, spec.batch)
            if method == "lrange":
                bounded = count is not None and number(count) != -1  # lrange(name, 0, -1): the whole list
            elif count is None:
                bounded = spec.bounded_by_default
        if family == PUBSUB and method == "pull":
            queue = self._pull_subscription(call, queue)
        destination = self.names.classify_all(_args(call, spec.to)) if spec.to else UNKNOWN_QUEUE
        opaque = any(a.star for a in call.args)  # *values, **attributes: parts we cannot read
        rate_given = None
        if spec.rate is not None and (_arg(call, spec.rate) is not None or not opaque):
            rate_given = _arg(call, spec.rate) is not None  # with **kwargs it may be in them
        return BrokerCall(
            call, family, spec.role, method, queue, tuple(body), tuple(_args(call, spec.attributes)),
            attribute_keywords, callbacks, bounded, destination, rate_given, opaque,
        )

    def _pull_subscription(self, call: cst.Call, queue: QueueRef) -> QueueRef:
        """``subscriber.pull(request={"subscription": path, "max_messages": 10})``."""
        request = _arg(call, ("request", 0))
        if isinstance(request, cst.Dict):
            for element in request.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                    if element.key.evaluated_value == "subscription":
                        return self.names.classify(element.value)
        return queue

    def _family(self, call: cst.Call, method: str, receiver: Optional[cst.BaseExpression]) -> Optional[str]:
        candidates = [f for f, table in METHODS.items() if method in table]
        if method == "subscribe":
            candidates = [KAFKA, PUBSUB]
        if receiver is None:
            # Consumer(conn, queues=[...], callbacks=[...]) imported from kombu.
            names = self.ctx.call_name(call)
            for family in candidates:
                if any(_under(n, PACKAGES[family]) for n in names):
                    return family
            if method == "Consumer" and KOMBU in self.imported and _has_keyword(call, "callbacks", "on_message"):
                return KOMBU  # ConsumerMixin.get_consumers(self, Consumer, channel)
            return None
        traced = self.family_of(receiver)
        if traced is not None:
            if traced == CELERY and KOMBU in candidates:
                return KOMBU  # app.connection(), app.producer_pool: kombu objects
            return traced if traced in candidates else None
        if SQS in candidates and _has_keyword(call, "QueueUrl", "SourceArn", "Entries", "MessageBody", "QueueName"):
            return SQS
        if method == "subscribe":
            if PUBSUB in self.imported and _has_keyword(call, "callback"):
                return PUBSUB
            return KAFKA if KAFKA in self.imported and not _has_keyword(call, "callback") else None
        # The receiver is a parameter or comes from elsewhere: trust the method when the module
        # imports the family and, for common method names, the receiver's name says what it is.
        receiver_name = (dotted_name(receiver) or "").rsplit(".", 1)[-1].lower()
        for family in candidates:
            if family in self.imported and _plausible(call, family, method, receiver_name):
                return family
        return None

    def _first_is_callable(self, call: cst.Call) -> bool:
        positional, _ = call_args(call)
        if not positional:
            return False
        first = positional[0]
        if isinstance(first, cst.Lambda):
            return True
        return self.function_of(first) is not None

    # ------------------------------------------------------------ tracing

    def origin(self, expr: cst.BaseExpression, depth: int = 0) -> List[cst.CSTNode]:
        """The calls (and annotations) an object comes from, nearest first.

        ``ch`` ← ``conn.channel()`` ← ``pika.BlockingConnection(...)``; ``self.sqs`` ←
        ``boto3.client("sqs")`` in ``__init__``; ``channel: BlockingChannel`` (a parameter).
        """
        if depth > 8:
            return []
        expr = unwrap_await(expr)
        if isinstance(expr, cst.Call):
            chain: List[cst.CSTNode] = [expr]
            if isinstance(expr.func, cst.Attribute):
                chain += self.origin(expr.func.value, depth + 1)
            return chain
        if isinstance(expr, cst.Name):
            bindings = self.ctx.bindings(expr)
            if len(bindings) == 1:
                binding = bindings[0]
                if binding.kind in ("assign", "annassign", "with") and binding.value is not None:
                    return self.origin(binding.value, depth + 1)
                if binding.kind == "param" and isinstance(binding.node, cst.Param) and binding.node.annotation:
                    return [binding.node.annotation.annotation]
            if not bindings:
                constant = self.ctx.module_constant(expr.value, expr)
                if constant is not None:
                    return self.origin(constant, depth + 1)
            return []
        if isinstance(expr, cst.Attribute):
            if dotted_name(expr.value) in ("self", "cls"):
                values = [b.value for b in self.names.attribute_bindings(expr) if b.value is not None]
                if len(values) == 1:
                    return self.origin(values[0], depth + 1)
                return []
            # channel.default_exchange, app.producer_pool: an attribute of a client.
            return [expr] + self.origin(expr.value, depth + 1)
        return []

    def family_of(self, expr: cst.BaseExpression) -> Optional[str]:
        key = id(expr)
        if key in self._family_cache:
            return self._family_cache[key]
        found: Optional[str] = None
        for node in self.origin(expr):
            found = self._family_of_node(node)
            if found is not None:
                break
        self._family_cache[key] = found
        return found

    def _family_of_node(self, node: cst.CSTNode) -> Optional[str]:
        """The family of a client-creating call or an annotation; ``other`` for a known non-broker
        (``boto3.client("s3")``, ``queue.Queue()``, a class of this module)."""
        if isinstance(node, cst.Call):
            method = last_name(node.func)
            if method in ("client", "resource", "create_client"):
                service = _arg(node, ("service_name", 0))
                if isinstance(service, cst.SimpleString):
                    return SQS if service.evaluated_value == "sqs" else OTHER
            names = self.ctx.call_name(node)
            if isinstance(node.func, cst.Name) and any(b.kind == "class" for b in self.ctx.bindings(node.func)):
                return OTHER
        else:
            names = self.ctx.qualified_names(node)
        for family, packages in PACKAGES.items():
            if family == SQS:
                continue  # boto3.client("s3") is not SQS: only the service literal says so
            if any(_under(n, packages) for n in names):
                return family
        if any(n in _NOT_BROKERS or _under(n, _NOT_BROKER_PACKAGES) for n in names):
            return OTHER
        return None

    def _object_call(self, expr: cst.BaseExpression) -> Optional[cst.CSTNode]:
        for node in self.origin(expr):
            if isinstance(node, cst.Call) and last_name(node.func) in OBJECT_QUEUE_ARGS:
                return node
        return None

    def queue_of_object(self, expr: cst.BaseExpression) -> QueueRef:
        """The queue a client object stands for: ``sqs.get_queue_by_name(QueueName="orders-dlq")``,
        ``channel.declare_queue("orders.dlq")``, ``KafkaConsumer("orders.dlq")`` or its
        ``subscribe([...])``, ``client.get_queue_receiver("orders", sub_queue=DEAD_LETTER)``."""
        for node in self.origin(expr):
            if isinstance(node, cst.Attribute) and node.attr.value == "default_exchange":
                return QueueRef("neutral")
            if not isinstance(node, cst.Call):
                continue
            method = last_name(node.func)
            if method in OBJECT_QUEUE_ARGS:
                queue = self.names.classify_all(_args(node, OBJECT_QUEUE_ARGS[method]))
                sub_queue = _arg(node, ("sub_queue", None))
                if sub_queue is not None and self.names.classify(sub_queue).is_dlq:
                    # Service Bus: the dead-letter sub-queue of a queue or subscription.
                    named = [a for a in OBJECT_QUEUE_ARGS[method] if a[0] != "sub_queue"]
                    names = [self.names.display(e) for e in _args(node, named)]
                    return QueueRef(queue.kind, "/".join(names) + "/$DeadLetterQueue")
                return queue
            if method in _TOPIC_CONSUMERS and call_args(node)[0]:
                return self.names.classify_all(call_args(node)[0])
        subscribed = self._subscriptions(expr)
        if subscribed:
            return self.names.classify_all(subscribed)
        return UNKNOWN_QUEUE

    def _subscriptions(self, expr: cst.BaseExpression) -> List[cst.BaseExpression]:
        """Topics given to ``<expr>.subscribe(...)`` in the same function (or class, for ``self.x``)."""
        name = dotted_name(expr)
        if name is None:
            return []
        if name.startswith("self."):
            scope = next((a for a in self.ctx.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
        else:
            scope = self.ctx.enclosing_function(expr) or self.ctx.module
        if scope is None:
            return []
        out: List[cst.BaseExpression] = []
        for node in walk(scope, skip=()):
            if isinstance(node, cst.Call) and last_name(node.func) in ("subscribe", "assign"):
                if isinstance(node.func, cst.Attribute) and dotted_name(node.func.value) == name:
                    topics = _arg(node, ("topics", 0))
                    if topics is not None:
                        out.append(topics)
        return out

    def iterable_consumer(self, expr: cst.BaseExpression) -> Optional[Tuple[str, QueueRef, bool]]:
        """An object that yields messages when iterated: (family, source, stops by itself)."""
        expr = unwrap_await(expr)
        # A call is iterated for what it returns (channel.consume(...), queue.iterator()), a name
        # for the object it holds (a KafkaConsumer, a Service Bus receiver).
        chain = [expr] if isinstance(expr, cst.Call) else self.origin(expr)
        for node in chain:
            if not isinstance(node, cst.Call):
                continue
            method = last_name(node.func)
            if method not in ITERABLE_CONSUMERS:
                continue
            family = self.family_of(expr) or self._family_of_node(node)
            if method in ("consume", "iterator"):
                recognised = self.recognise(node)
                if recognised is None or recognised.role != STREAM:
                    return None
                return recognised.broker, recognised.queue, _has_keyword(node, ITERABLE_CONSUMERS[method])
            if family is None:
                return None
            stop = ITERABLE_CONSUMERS[method]
            source = self.queue_of_object(expr if not isinstance(expr, cst.Call) else node)
            return family, source, bool(stop) and _has_keyword(node, stop)
        return None

    def function_of(self, expr: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """The function of this module a callback expression refers to (``handle``, ``self.on_message``)."""
        if isinstance(expr, cst.Name):
            for binding in self.ctx.bindings(expr):
                if binding.kind == "def" and isinstance(binding.node, cst.FunctionDef):
                    return binding.node
            return None
        if isinstance(expr, cst.Attribute) and dotted_name(expr.value) in ("self", "cls"):
            owner = next((a for a in self.ctx.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
            if owner is not None and isinstance(owner.body, cst.IndentedBlock):
                for member in owner.body.body:
                    if isinstance(member, cst.FunctionDef) and member.name.value == expr.attr.value:
                        return member
        return None

    def message_parameters(self, func: cst.FunctionDef) -> List[str]:
        """Parameters that hold a received message: typed as one (``message: IncomingMessage``,
        ``msg: confluent_kafka.Message``), acknowledged (``message.ack()``,
        ``receiver.complete_message(msg)``), or all the parameters of a pika callback that
        acknowledges ``method.delivery_tag``."""
        params = [p for p in func.params.params + func.params.posonly_params + func.params.kwonly_params]
        names = {p.name.value for p in params}
        out = []
        for param in params:
            if param.annotation is not None:
                qualified = self.ctx.qualified_names(param.annotation.annotation)
                if any(
                    _MESSAGE_TYPE.search(q.rsplit(".", 1)[-1]) and any(_under(q, pk) for pk in PACKAGES.values())
                    for q in qualified
                ):
                    out.append(param.name.value)
        for node in walk(func.body):
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
                continue
            method = node.func.attr.value
            receiver = dotted_name(node.func.value)
            if method in _ACKS and receiver in names:
                out.append(receiver)  # type: ignore[arg-type]
            elif method in _SETTLES:
                out += [a.value.value for a in node.args if isinstance(a.value, cst.Name) and a.value.value in names]
            elif method in ("basic_ack", "basic_nack", "basic_reject"):
                tag = dotted_name(_arg(node, ("delivery_tag", 0)))
                if tag and tag.split(".")[0] in names:
                    return [p.name.value for p in params if p.name.value not in ("self", "cls")]
        return list(dict.fromkeys(out))

    # ------------------------------------------------------------ celery

    def celery_tasks(self) -> Dict[str, cst.FunctionDef]:
        """Functions of this module decorated as celery tasks, by name."""
        if self._tasks is None:
            self._tasks = {}
            for node in walk(self.ctx.module, skip=()):
                if isinstance(node, cst.FunctionDef) and self.task_decorator(node) is not None:
                    self._tasks[node.name.value] = node
        return self._tasks

    def task_decorator(self, func: cst.FunctionDef) -> Optional[cst.Decorator]:
        for decorator in func.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            names = self.ctx.qualified_names(target)
            if names & _CELERY_DECORATORS:
                return decorator
            if last_name(target) == "task" and isinstance(target, cst.Attribute):
                if self.family_of(target.value) == CELERY or any(n.startswith("celery") for n in names):
                    return decorator
        return None

    def task_queue(self, func: cst.FunctionDef) -> QueueRef:
        """The queue a celery task is bound to (``@app.task(queue="orders")``); the default queue otherwise."""
        decorator = self.task_decorator(func)
        if decorator is not None and isinstance(decorator.decorator, cst.Call):
            queue = _arg(decorator.decorator, ("queue", None))
            if queue is not None:
                return self.names.classify(queue)
        return QueueRef("work", "celery")

    def _celery(self, call: cst.Call, method: str) -> Optional[BrokerCall]:
        positional, keywords = call_args(call)
        if not isinstance(call.func, cst.Attribute):
            return None
        receiver = call.func.value
        if method == "send_task":
            if self.family_of(receiver) != CELERY and CELERY not in self.imported:
                return None
            queue_expr = keywords.get("queue") or keywords.get("routing_key")
            queue = self.names.classify(queue_expr) if queue_expr is not None else UNKNOWN_QUEUE
            body = [e for e in (_arg(call, ("args", 1)), _arg(call, ("kwargs", 2))) if e is not None]
            return BrokerCall(call, CELERY, PUBLISH, method, queue, tuple(body), _kw(keywords, "headers"))
        task = self.celery_tasks().get(receiver.value) if isinstance(receiver, cst.Name) else None
        if task is None and not (CELERY in self.imported and method == "apply_async" and "queue" in keywords):
            return None
        if method == "delay":
            queue = self.task_queue(task) if task is not None else UNKNOWN_QUEUE
            body = tuple(positional) + tuple(keywords.values())
            attribute_keywords = tuple(keywords)
            return BrokerCall(call, CELERY, PUBLISH, method, queue, body, (), attribute_keywords,
                              opaque=any(a.star for a in call.args))
        queue_expr = keywords.get("queue")
        queue = self.names.classify(queue_expr) if queue_expr is not None else (
            self.task_queue(task) if task is not None else UNKNOWN_QUEUE
        )
        body = [e for e in (_arg(call, ("args", 0)), _arg(call, ("kwargs", 1))) if e is not None]
        return BrokerCall(call, CELERY, PUBLISH, method, queue, tuple(body), _kw(keywords, "headers"))


# ---------------------------------------------------------------- helpers


def _arg(call: cst.Call, arg: Arg) -> Optional[cst.BaseExpression]:
    keyword, index = arg
    positional, keywords = call_args(call)
    if keyword in keywords:
        return keywords[keyword]
    if index is not None and index < len(positional):
        return positional[index]
    return None


def _args(call: cst.Call, args: Iterable[Arg]) -> List[cst.BaseExpression]:
    out = []
    for arg in args:
        value = _arg(call, arg)
        if value is not None and all(value is not seen for seen in out):
            out.append(value)
    return out


def _kw(keywords: Dict[str, cst.BaseExpression], name: str) -> Tuple[cst.BaseExpression, ...]:
    return (keywords[name],) if name in keywords else ()


def _has_keyword(call: cst.Call, *names: str) -> bool:
    return any(arg.keyword is not None and arg.keyword.value in names for arg in call.args)


def _under(name: str, packages: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _plausible(call: cst.Call, family: str, method: str, receiver_name: str) -> bool:
    """A method of ``family`` called on an object we cannot trace: is it that family's?"""
    hint = _GENERIC.get(method)
    if hint is None:
        return True  # basic_publish, lpush, xadd, produce, send_messages: distinctive enough
    if family == RABBITMQ and method == "publish" and _has_keyword(call, "routing_key"):
        return True  # aio-pika exchange.publish(message, routing_key=...)
    return bool(hint) and bool(re.search(hint, receiver_name))


def _imported_families(module: cst.Module) -> FrozenSet[str]:
    """Families whose packages the module imports (anywhere, by ``import`` or ``from … import``)."""
    paths = set()
    for node in walk(module, skip=()):
        if isinstance(node, cst.Import):
            for alias in node.names:
                paths.add(dotted_name(alias.name) or "")
        elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            base = dotted_name(node.module) or ""
            paths.add(base)
            if not isinstance(node.names, cst.ImportStar):
                paths.update(f"{base}.{alias.name.value}" for alias in node.names if isinstance(alias.name, cst.Name))
    return frozenset(f for f, packages in PACKAGES.items() if any(_under(p, packages) for p in paths))


__all__ = [
    "Brokers", "BrokerCall", "Spec", "METHODS", "PACKAGES", "ALL_METHODS", "PUBLISH_METHODS", "FACTORY_NAMES",
    "PUBLISH", "RECEIVE", "STREAM", "SUBSCRIBE", "MOVE",
]

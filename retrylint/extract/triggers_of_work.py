"""What starts a piece of code: a message, a schedule, a loop that never ends, or a human.

Automatic (nobody decides that it runs now):

* ``consumer``: a consumer callback (pika ``basic_consume``, aio-pika ``queue.consume``,
  kombu ``Consumer(callbacks=…)``, Pub/Sub ``subscribe(…, callback=…)``), a celery task
  bound to a dead-letter queue, or a loop over a consumer that never stops (a Kafka
  consumer, a Service Bus receiver, an aio-pika queue iterator);
* ``scheduled``: celery beat (``beat_schedule``, ``add_periodic_task``), APScheduler
  (``@scheduled_job``, ``add_job``), ``schedule.every(…).do(…)``, huey/celery
  ``periodic_task``, rq-scheduler, aiocron;
* ``forever-loop``: inside ``while True`` (or ``while self.running``) with no ``break`` or
  ``return``.

Human-triggered (``cli``): reachable only from command-line entry points: click and typer
commands, argparse programs (``parse_args``, ``set_defaults(func=…)``), ``fire.Fire``,
Django management commands (``BaseCommand.handle``), the ``if __name__ == "__main__":``
block.

Anything else is ``unknown``: a function nobody in the module calls may be called from
anywhere. Callers are followed inside the module (``f()``, ``self.f()``): a function is
automatic when one caller is, human-triggered when all its callers are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..syntax import BREAK, LOOPS, RETURN, call_args, dotted_name, is_true_literal, last_name, outcomes, statements, walk
from .brokers import BrokerCall, Brokers
from .context import ModuleContext

CONSUMER = "consumer"
SCHEDULED = "scheduled"
FOREVER = "forever-loop"
CLI = "cli"
UNKNOWN = "unknown"

_RUNNING = re.compile(r"running|alive|active|stop|shutdown|should_exit|keep_going|forever|closing|exit", re.I)
_SCHEDULER_DECORATORS = frozenset({"scheduled_job", "periodic_task", "db_periodic_task"})
_SCHEDULER_QUALIFIED = frozenset({"schedule.repeat", "aiocron.crontab", "discord.ext.tasks.loop"})
_CLI_PACKAGES = ("click", "typer", "asyncclick", "cloup", "rich_click")
_DJANGO_COMMANDS = re.compile(r"^django\.core\.management(\.base)?\.(BaseCommand|LabelCommand|AppCommand)$")


@dataclass(frozen=True)
class Runner:
    trigger: str
    detail: str = ""

    @property
    def automatic(self) -> Optional[bool]:
        if self.trigger in (CONSUMER, SCHEDULED, FOREVER):
            return True
        if self.trigger == CLI:
            return False
        return None


UNKNOWN_RUNNER = Runner(UNKNOWN)


def forever_loop(loop: cst.CSTNode) -> bool:
    """``while True`` / ``while self.running`` / ``for _ in itertools.count()`` with no break or return."""
    if isinstance(loop, cst.While):
        test = loop.test
        endless = is_true_literal(test) or bool(_RUNNING.search(" ".join(_names(test))))
    elif isinstance(loop, cst.For):
        endless = isinstance(loop.iter, cst.Call) and dotted_name(loop.iter.func) in ("itertools.count", "count")
    else:
        return False
    return endless and not loop_exits(loop)


def loop_exits(loop: cst.CSTNode) -> bool:
    ends = outcomes(statements(loop.body))  # type: ignore[attr-defined]
    return BREAK in ends or RETURN in ends


def _names(expr: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(expr) if isinstance(n, (cst.Name, cst.Attribute))]


class WorkTriggers:
    """Classifies what runs each function of one module."""

    def __init__(self, ctx: ModuleContext, brokers: Brokers, subscriptions: Sequence[BrokerCall]) -> None:
        self.ctx = ctx
        self.brokers = brokers
        #: Functions (and lambdas) registered as consumer callbacks → the subscription.
        self.callbacks: Dict[cst.CSTNode, BrokerCall] = {}
        for subscription in subscriptions:
            for callback in subscription.callbacks:
                for target in self.callback_targets(callback):
                    self.callbacks.setdefault(target, subscription)
        self._scheduled: Optional[Dict[cst.FunctionDef, str]] = None
        self._cli: Optional[Dict[cst.FunctionDef, str]] = None
        self._callers: Optional[Dict[cst.FunctionDef, List[cst.CSTNode]]] = None
        self._memo: Dict[cst.FunctionDef, Runner] = {}
        self._visiting: Set[cst.FunctionDef] = set()

    def callback_targets(self, callback: cst.BaseExpression) -> List[cst.CSTNode]:
        """``handle``, ``self.on_message``, ``functools.partial(handle, …)``, ``lambda …: handle(…)``."""
        callback = callback.value if isinstance(callback, cst.Arg) else callback
        if isinstance(callback, cst.Lambda):
            out: List[cst.CSTNode] = [callback]
            if isinstance(callback.body, cst.Call):
                func = self.brokers.function_of(callback.body.func)
                if func is not None:
                    out.append(func)
            return out
        if isinstance(callback, cst.Call) and self.ctx.call_name(callback) & {"functools.partial", "partial"}:
            positional, _ = call_args(callback)
            return self.callback_targets(positional[0]) if positional else []
        func = self.brokers.function_of(callback)
        return [func] if func is not None else []

    # ------------------------------------------------------------ entry

    def at(self, node: cst.CSTNode) -> Runner:
        """What runs the code at ``node``."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, LOOPS):
                runner = self._loop_runner(ancestor)
                if runner is not None:
                    return runner
            if isinstance(ancestor, cst.Lambda) and ancestor in self.callbacks:
                return self._consumer(ancestor, self.callbacks[ancestor])
            if isinstance(ancestor, cst.FunctionDef):
                return self.of_function(ancestor)
            if isinstance(ancestor, cst.If) and _is_main_guard(ancestor):
                return Runner(CLI, "in the `if __name__ == \"__main__\":` block")
        return UNKNOWN_RUNNER

    def _loop_runner(self, loop: cst.CSTNode) -> Optional[Runner]:
        line = self.ctx.location(loop).line
        if forever_loop(loop):
            header = "while " + self.ctx.code(loop.test) if isinstance(loop, cst.While) else "for " + self.ctx.code(loop.iter)  # type: ignore[attr-defined]
            return Runner(FOREVER, f"inside `{header}` (line {line}), which never ends")
        if isinstance(loop, cst.For) and not loop_exits(loop):
            consumer = self.brokers.iterable_consumer(loop.iter)
            if consumer is not None and not consumer[2]:
                family, source, _ = consumer
                return Runner(CONSUMER, f"in a loop over a {family} consumer of `{source.text or '?'}` (line {line}) that never stops")
        return None

    def of_function(self, func: cst.FunctionDef) -> Runner:
        if func in self._memo:
            return self._memo[func]
        if func in self._visiting:
            return UNKNOWN_RUNNER
        self._visiting.add(func)
        try:
            runner = self._of_function(func)
        finally:
            self._visiting.discard(func)
        self._memo[func] = runner
        return runner

    def _of_function(self, func: cst.FunctionDef) -> Runner:
        name = func.name.value
        if func in self.callbacks:
            return self._consumer(func, self.callbacks[func])
        if self.brokers.task_decorator(func) is not None:
            queue = self.brokers.task_queue(func)
            if queue.is_dlq:
                return Runner(CONSUMER, f"in `{name}`, a celery task bound to `{queue.text}`")
        scheduled = self.scheduled().get(func)
        if scheduled:
            return Runner(SCHEDULED, f"in `{name}`, {scheduled}")
        cli = self.cli().get(func)
        if cli:
            return Runner(CLI, f"in `{name}`, {cli}")
        return self._from_callers(func)

    def _consumer(self, target: cst.CSTNode, subscription: BrokerCall) -> Runner:
        line = self.ctx.location(subscription.call).line
        what = f"`{target.name.value}`" if isinstance(target, cst.FunctionDef) else "a lambda"
        return Runner(
            CONSUMER,
            f"in {what}, a {subscription.description} callback on `{subscription.queue.text or '?'}` (line {line})",
        )

    def _from_callers(self, func: cst.FunctionDef) -> Runner:
        callers = self.callers().get(func, [])
        if not callers:
            return UNKNOWN_RUNNER
        runners = [self.at(site) if isinstance(site, cst.Call) else UNKNOWN_RUNNER for site in callers]
        for runner, site in zip(runners, callers):
            if runner.automatic:
                caller = self.ctx.enclosing_function(site)
                via = f"called from `{caller.name.value}`" if caller is not None else "called"
                return Runner(runner.trigger, f"{via} (line {self.ctx.location(site).line}), {runner.detail}")
        if all(r.trigger == CLI for r in runners):
            return Runner(CLI, runners[0].detail)
        return UNKNOWN_RUNNER

    # ------------------------------------------------------------ indexes

    def callers(self) -> Dict[cst.FunctionDef, List[cst.CSTNode]]:
        """Calls of (and other references to) each function of the module, by the function."""
        if self._callers is None:
            self._callers = {}
            for node in walk(self.ctx.module, skip=()):
                if isinstance(node, cst.Call):
                    func = self.brokers.function_of(node.func)
                    if func is not None:
                        self._callers.setdefault(func, []).append(node)
                elif isinstance(node, cst.Arg):
                    func = self.brokers.function_of(node.value)
                    if func is not None:  # passed somewhere: Thread(target=f), a registry
                        self._callers.setdefault(func, []).append(node)
        return self._callers

    def scheduled(self) -> Dict[cst.FunctionDef, str]:
        if self._scheduled is None:
            self._scheduled = {}
            tasks = self.brokers.celery_tasks()
            for node in walk(self.ctx.module, skip=()):
                if isinstance(node, cst.FunctionDef):
                    for decorator in node.decorators:
                        what = self._scheduler_decorator(decorator)
                        if what:
                            self._scheduled.setdefault(node, what)
                elif isinstance(node, cst.Call):
                    for func, what in self._scheduler_call(node):
                        self._scheduled.setdefault(func, what)
                elif isinstance(node, cst.Dict):
                    for task_name, line in _beat_entries(node, self.ctx):
                        func = tasks.get(task_name.rsplit(".", 1)[-1])
                        if func is not None:
                            self._scheduled.setdefault(func, f"a celery beat task (line {line})")
        return self._scheduled

    def _scheduler_decorator(self, decorator: cst.Decorator) -> str:
        expr = decorator.decorator
        target = expr.func if isinstance(expr, cst.Call) else expr
        line = self.ctx.location(decorator).line
        if last_name(target) in _SCHEDULER_DECORATORS or self.ctx.qualified_names(target) & _SCHEDULER_QUALIFIED:
            return f"a scheduled job (`@{self.ctx.code(target)}`, line {line})"
        return ""

    def _scheduler_call(self, call: cst.Call) -> List[Tuple[cst.FunctionDef, str]]:
        method = last_name(call.func)
        positional, keywords = call_args(call)
        line = self.ctx.location(call).line
        targets: List[cst.BaseExpression] = []
        what = ""
        if method == "add_job":  # APScheduler
            targets = [keywords.get("func", positional[0] if positional else None)]  # type: ignore[list-item]
            what = f"an APScheduler job (line {line})"
        elif method == "do" and isinstance(call.func, cst.Attribute) and "every" in self.ctx.code(call.func.value):
            targets = positional[:1]  # schedule.every(5).minutes.do(job)
            what = f"a `schedule` job (line {line})"
        elif method == "add_periodic_task":  # celery beat
            targets = [keywords.get("sig", positional[1] if len(positional) > 1 else None)]  # type: ignore[list-item]
            what = f"a celery periodic task (line {line})"
        elif method in ("schedule", "cron") and "func" in keywords:  # rq-scheduler
            targets = [keywords["func"]]
            what = f"an rq-scheduler job (line {line})"
        out = []
        for target in targets:
            if target is None:
                continue
            if isinstance(target, cst.Call) and last_name(target.func) in ("s", "si", "signature"):
                target = target.func.value if isinstance(target.func, cst.Attribute) else target
            func = self.brokers.function_of(target)
            if func is not None:
                out.append((func, what))
        return out

    def cli(self) -> Dict[cst.FunctionDef, str]:
        if self._cli is None:
            self._cli = {}
            for node in walk(self.ctx.module, skip=()):
                if isinstance(node, cst.FunctionDef):
                    what = self._cli_function(node)
                    if what:
                        self._cli[node] = what
                elif isinstance(node, cst.Call):
                    method = last_name(node.func)
                    positional, keywords = call_args(node)
                    target = None
                    if method == "set_defaults" and "func" in keywords:
                        target, what = keywords["func"], "an argparse sub-command"
                    elif self.ctx.call_name(node) & {"fire.Fire"} and positional:
                        target, what = positional[0], "a `fire` command"
                    func = self.brokers.function_of(target) if target is not None else None
                    if func is not None:
                        self._cli.setdefault(func, what)
        return self._cli

    def _cli_function(self, func: cst.FunctionDef, depth: int = 0) -> str:
        for decorator in func.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            if last_name(target) not in ("command", "group", "callback"):
                continue
            names = set(self.ctx.qualified_names(target))
            if isinstance(target, cst.Attribute):
                names |= {q for n in self.brokers.origin(target.value) for q in self._qualified(n)}
                owner = self.brokers.function_of(target.value)  # @cli.command() under @click.group() def cli
                if owner is not None and owner is not func and depth < 4 and self._cli_function(owner, depth + 1):
                    return f"a command-line command (`@{self.ctx.code(target)}`)"
            if any(n.split(".")[0] in _CLI_PACKAGES for n in names):
                return f"a command-line command (`@{self.ctx.code(target)}`)"
        if func.name.value == "handle":
            owner = next((a for a in self.ctx.ancestors(func) if isinstance(a, cst.ClassDef)), None)
            if owner is not None and any(
                any(_DJANGO_COMMANDS.match(n) for n in self.ctx.qualified_names(base.value)) for base in owner.bases
            ):
                return f"a Django management command (`{owner.name.value}`)"
        for node in walk(func.body):
            if isinstance(node, cst.Call) and last_name(node.func) in ("parse_args", "parse_known_args"):
                receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
                if receiver is not None and any(
                    q.startswith("argparse.") for n in self.brokers.origin(receiver) for q in self._qualified(n)
                ):
                    return "an argparse program"
        return ""

    def _qualified(self, node: cst.CSTNode) -> Set[str]:
        if isinstance(node, cst.Call):
            return set(self.ctx.call_name(node))
        return set(self.ctx.qualified_names(node))


def _is_main_guard(node: cst.If) -> bool:
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    texts = {dotted_name(s) or (s.evaluated_value if isinstance(s, cst.SimpleString) else None) for s in sides}
    return texts == {"__name__", "__main__"}


def _beat_entries(node: cst.Dict, ctx: ModuleContext) -> List[Tuple[str, int]]:
    """``{"name": {"task": "pkg.tasks.redrive", "schedule": 300}}`` (celery beat): the task names."""
    out = []
    keys = {
        e.key.evaluated_value: e.value
        for e in node.elements
        if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
    }
    if "task" in keys and "schedule" in keys and isinstance(keys["task"], cst.SimpleString):
        value = keys["task"].evaluated_value  # type: ignore[union-attr]
        if isinstance(value, str):
            out.append((value, ctx.location(node).line))
    return out


__all__ = ["Runner", "WorkTriggers", "forever_loop", "loop_exits", "CONSUMER", "SCHEDULED", "FOREVER", "CLI", "UNKNOWN"]

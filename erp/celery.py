"""Celery app. Two queues: `realtime` (customer replies) and `bulk` (ingestion, digests).

The request id of the web request that enqueues a task travels in the message headers and
is restored around the task's execution, so one id follows a message from webhook to reply.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import uuid
from typing import Any, NamedTuple

from celery import Celery, Task, signals
from celery.apps.beat import Beat
from celery.fixups.django import (  # type: ignore[attr-defined]  # celery-types lacks it
    DjangoFixup,
    DjangoWorkerFixup,
)
from django.core.signals import setting_changed
from django.dispatch import receiver
from kombu import Exchange, Queue
from kombu import transport as kombu_transport
from kombu.utils.objects import cached_property

from erp.broker import capturing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")


class ContextTask(Task):
    """Runs the task with the enqueuing request's id in `erp.logging.request_id_var`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from erp.logging import request_id_var

        request_id = getattr(self.request, "request_id", None) or f"task-{self.request.id}"
        token = request_id_var.set(request_id)
        try:
            return super().__call__(*args, **kwargs)
        finally:
            request_id_var.reset(token)

    def AsyncResult(self, task_id: str, **kwargs: Any) -> Any:
        """A task whose result is ignored has nothing to fetch: its handle gets no result
        backend. Celery builds one per thread otherwise (a Redis client, its driver info read
        from the package metadata: ~2 ms), and ASGI runs each request on a new thread, so
        every webhook that queued an answer paid for one."""
        if self.ignore_result and "backend" not in kwargs:
            return self.app.AsyncResult(
                task_id, backend=_no_results(), task_name=self.name, **kwargs
            )
        return super().AsyncResult(task_id, **kwargs)


_disabled: list[Any] = []


def _no_results() -> Any:
    """One `DisabledBackend` for the process: any wait on it says no backend is configured."""
    if not _disabled:
        from celery.backends.base import DisabledBackend

        _disabled.append(DisabledBackend(app))
    return _disabled[0]


# The broker's Redis transport keeps one client per channel (erp/broker.py): redis://,
# rediss:// and redis+socket:// (the embedded server's) resolve through these names.
kombu_transport.TRANSPORT_ALIASES.update(
    {"redis": "erp.broker:Transport", "rediss": "erp.broker:Transport"}
)


class BeatWithoutTasks(Beat):
    """`celery -A erp beat`: the scheduler sends each due task by its name (routed by name:
    CELERY_TASK_ROUTES) and never runs one, so it sets up neither Django's apps nor the tasks
    modules (Celery's beat would import both: ~70 MB of resident memory for nothing). It
    reads the settings and logs as they configure; it never queries the database."""

    def init_loader(self) -> None:
        from django.conf import settings
        from django.utils.log import configure_logging

        configure_logging(settings.LOGGING_CONFIG, settings.LOGGING)
        if self.app is not None:  # always (the app it was made from)
            self.app.finalize()


class _Celery(Celery):
    @cached_property
    def Beat(self) -> Any:
        return self.subclass_with_self(BeatWithoutTasks)


class _PoolKeepingWorkerFixup(DjangoWorkerFixup):
    """Celery's Django worker fix-up, except that a prefork child keeps its connection pool
    from task to task. Celery closes a prefork child's pool before and after every task
    (celery#10554): two new PostgreSQL sessions per message answered, each loading the catalog
    again, which was most of the database's CPU per message in bench/webhook_load.py. Around a
    task each connection still goes back to the pool (`close()`); the pool itself is closed
    where it must be, in a child just forked (`on_worker_process_init`: the parent's pool is
    not the child's to use)."""

    def close_database(self, **kwargs: Any) -> None:
        for conn in self._db.connections.all(initialized_only=True):
            with contextlib.suppress(*self.interface_errors):
                try:
                    conn.close()
                except self.DatabaseError as exc:
                    if "closed" not in str(exc) and "not connected" not in str(exc):
                        raise


class _DjangoFixup(DjangoFixup):
    _worker_fixup: DjangoWorkerFixup | None

    @property
    def worker_fixup(self) -> DjangoWorkerFixup:
        if self._worker_fixup is None:
            self._worker_fixup = _PoolKeepingWorkerFixup(self.app)
        return self._worker_fixup

    @worker_fixup.setter
    def worker_fixup(self, value: DjangoWorkerFixup) -> None:
        self._worker_fixup = value


def django_fixup(app: Celery) -> DjangoFixup:
    """Celery's Django fix-up (django.setup() before tasks load, connections handed back
    around each task) with `_PoolKeepingWorkerFixup` for the worker."""
    fixup = _DjangoFixup(app)
    fixup.install()
    return fixup


app = _Celery("erp", task_cls=ContextTask, fixups=["erp.celery:django_fixup"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [
    Queue("realtime", Exchange("realtime"), routing_key="realtime"),
    Queue("bulk", Exchange("bulk"), routing_key="bulk"),
]
app.autodiscover_tasks()


@signals.before_task_publish.connect
def _carry_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    from erp.logging import request_id_var

    request_id = request_id_var.get()
    if headers is not None and "request_id" not in headers and request_id != "-":
        headers["request_id"] = request_id


_discovery = threading.Lock()


def enqueue(name: str, *args: Any, countdown: float | None = None) -> None:
    """Queues the task registered under its stable `name` (e.g.
    "ai_agents.channel_conversation_answer") with positional `args`.

    Services and the engine enqueue through here instead of importing the tasks module, which
    imports them back: the task is looked up by name in the app's registry (which loads the
    tasks modules on first use), so the import graph stays free of cycles. Honours
    CELERY_TASK_ALWAYS_EAGER and the queue routes like `task.delay` does."""
    if name not in app.tasks:
        # Autodiscovery: every installed app's tasks module. Under a lock: a thread arriving
        # while another imports them would find the module half-run, its task unregistered
        # (NotRegistered, seen with 20 threads in bench/pipeline.py's load).
        with _discovery:
            app.loader.import_default_modules()
    options: dict[str, Any] = {} if countdown is None else {"countdown": countdown}
    app.tasks[name].apply_async(args=args, **options)


# --- a task's message as one Redis command, for a round trip the caller makes anyway --------


class _Prototype(NamedTuple):
    """A message Celery itself built for a task, kept with what every copy of it reuses
    decoded once: its body's kwargs and embed (the same for every call of the task) and its
    headers without the request id (each copy carries its own)."""

    key: str  # the task's queue key
    message: dict[str, Any]
    kwargs: dict[str, Any]
    embed: dict[str, Any]
    headers: dict[str, Any]

    @classmethod
    def of(cls, key: str, message: dict[str, Any]) -> _Prototype:
        _, kwargs, embed = json.loads(base64.b64decode(message["body"]))
        headers = {k: v for k, v in message["headers"].items() if k != "request_id"}
        return cls(key, message, kwargs, embed, headers)


# (pid, task name) -> the task's prototype
_prototypes: dict[tuple[int, str], _Prototype] = {}
_same_redis: list[bool] = []


def task_command(name: str, *args: Any) -> tuple[Any, ...] | None:
    """The Redis command (LPUSH onto the task's queue key) that queues `name(*args)` as
    `enqueue` would, for a caller that sends it with its own Redis writes in one round trip
    (the WhatsApp webhook: its inbox events and its answers' tasks). None: Celery queued it
    already (eager mode, a broker that is not `REDIS_URL`'s server, inside a task, where
    Celery links the new task to the running one): nothing to send. Raises what `enqueue`
    raises.

    The message is Celery's own: the first call per task and process has Celery build it
    (the broker's channel captures it instead of sending it: `erp.broker.capturing`); later
    calls copy that one with their own id, arguments, request id and delivery tag (kombu's
    Redis transport format, `celery.app.amqp.as_task_v2`): ~0.1 ms of CPU instead of
    `apply_async`'s ~1 ms."""
    if not _fast_path_usable():
        enqueue(name, *args)
        return None
    prototype = _prototypes.get((os.getpid(), name))
    if prototype is None:
        return _prototype_build(name, args)
    return ("LPUSH", prototype.key, _message_dumps(prototype, args))


def _fast_path_usable() -> bool:
    if _eager() or app.current_worker_task is not None:
        return False
    if not _same_redis:
        from django.conf import settings

        from erp.embedded import celery_url

        broker = str(app.conf.broker_url or "")
        _same_redis.append(
            broker.startswith(("redis://", "rediss://", "redis+socket://"))
            and broker == celery_url(settings.REDIS_URL)
        )
    return _same_redis[0]


_settings_eager: list[bool] = []


def _eager() -> bool:
    """`app.conf.task_always_eager`, without its ~30 us of lookups on every call (Celery's
    configuration view asks Django's settings for three spellings of the name, each missing
    one raising AttributeError): a value set at run time (`app.conf.task_always_eager = ...`,
    the tests) is in `changes`; the settings' own is read once (again after it changes:
    `_settings_read_again`)."""
    changes = app.conf.changes or {}
    if "task_always_eager" in changes:
        return bool(changes["task_always_eager"])
    if not _settings_eager:
        _settings_eager.append(bool(app.conf.task_always_eager))
    return _settings_eager[0]


# The settings `_eager` and `_fast_path_usable` read once per process.
_READ_ONCE = {"CELERY_TASK_ALWAYS_EAGER", "CELERY_BROKER_URL", "REDIS_URL"}


@receiver(setting_changed)
def _settings_read_again(setting: str = "", **_: Any) -> None:
    """A setting changed at run time (`override_settings`, the tests: production never does)
    is read again by the next call, not the value read first."""
    if setting in _READ_ONCE:
        _settings_eager.clear()
        _same_redis.clear()


def _argsrepr(args: tuple[Any, ...]) -> str:
    """Celery's `argsrepr` header (shown by monitors): `saferepr`, ~25 us, except for the
    common arguments (ids: printable ASCII without quotes or backslashes), whose plain repr
    is the same text."""
    maxsize = app.amqp.argsrepr_maxsize
    if all(type(a) is str and a.isascii() and a.isprintable() for a in args):
        text = repr(args)
        if len(text) <= maxsize and "\\" not in text and '"' not in text:
            return text
    from celery.utils.saferepr import saferepr

    return str(saferepr(args, maxsize))


def celery_message(name: str, *args: Any) -> tuple[str, dict[str, Any]] | None:
    """The (queue key, message) Celery builds for `name(*args)`, captured instead of sent
    (`erp.broker.capturing`). None when the channel sent it itself (a batch publish)."""
    captured: list[tuple[str, dict[str, Any]]] = []
    token = capturing.set(captured)
    try:
        enqueue(name, *args)
    finally:
        capturing.reset(token)
    if not captured:
        return None
    if len(captured) > 1:  # not sent, and not one command: the sweep queues it again
        raise RuntimeError(f"{name}: Celery built {len(captured)} messages for one call")
    return captured[0]


def _prototype_build(name: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Celery builds this call's message; it is kept (per process) and returned as the
    command. None when the channel sent it instead of handing it over (a batch publish)."""
    captured = celery_message(name, *args)
    if captured is None:
        return None
    key, message = captured
    _prototypes[os.getpid(), name] = _Prototype.of(key, message)
    return ("LPUSH", key, _dumps(message))


def _message_dumps(prototype: _Prototype, args: tuple[Any, ...]) -> str:
    from erp.logging import request_id_var

    task_id = str(uuid.uuid4())
    headers = {
        **prototype.headers,
        "id": task_id,
        "root_id": task_id,
        "argsrepr": _argsrepr(args),
    }
    request_id = request_id_var.get()
    if request_id != "-":
        headers["request_id"] = request_id
    # kombu's JSON, as Celery's own serializer: a UUID, a datetime or a Decimal argument is
    # encoded (and decoded by the worker) exactly as in a message Celery builds.
    body = _dumps([list(args), prototype.kwargs, prototype.embed]).encode()
    properties = {
        **prototype.message["properties"],
        "correlation_id": task_id,
        "delivery_tag": str(uuid.uuid4()),
    }
    return _dumps(
        {
            **prototype.message,
            "body": base64.b64encode(body).decode(),
            "headers": headers,
            "properties": properties,
        }
    )


def _dumps(value: Any) -> str:
    from kombu.utils.json import dumps

    return str(dumps(value))

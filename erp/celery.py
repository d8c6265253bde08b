"""Celery app. Two queues: `realtime` (customer replies) and `bulk` (ingestion, digests).

The request id of the web request that enqueues a task travels in the message headers and
is restored around the task's execution, so one id follows a message from webhook to reply.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from celery import Celery, Task, signals
from kombu import Exchange, Queue
from kombu import transport as kombu_transport

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

app = Celery("erp", task_cls=ContextTask)
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

"""Celery app. Two queues: `realtime` (customer replies) and `bulk` (ingestion, digests).

The request id of the web request that enqueues a task travels in the message headers and
is restored in the worker, so one id follows a message from webhook to reply.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")

app = Celery("erp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue("realtime"), Queue("bulk")]
app.autodiscover_tasks()


@signals.before_task_publish.connect
def _carry_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    from erp.logging import request_id_var

    if headers is not None and "request_id" not in headers:
        headers["request_id"] = request_id_var.get()


_tokens: dict[str, Any] = {}


@signals.task_prerun.connect
def _restore_request_id(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    from erp.logging import request_id_var

    request_id = getattr(task.request, "request_id", None) if task is not None else None
    if task_id is not None:
        _tokens[task_id] = request_id_var.set(request_id or f"task-{task_id}")


@signals.task_postrun.connect
def _forget_request_id(task_id: str | None = None, **_: Any) -> None:
    from erp.logging import request_id_var

    token = _tokens.pop(task_id, None) if task_id is not None else None
    if token is not None:
        request_id_var.reset(token)

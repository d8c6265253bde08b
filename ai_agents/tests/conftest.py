from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ai_agents.tests.whatsapp_support import wa_binding, wa_settings  # noqa: F401


@pytest.fixture
def run_tasks(django_capture_on_commit_callbacks: Any) -> Iterator[Any]:
    """`with run_tasks(): ...`: tasks queued on commit inside the block run in-process when
    it ends (Celery eager mode), as a worker would run them."""
    from erp.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield lambda: django_capture_on_commit_callbacks(execute=True)
    finally:
        app.conf.task_always_eager = previous

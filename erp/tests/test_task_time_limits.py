"""Every Celery task has a soft and a hard time limit: a task that runs away (a hostile document,
a stuck call) is stopped, and the worker goes on with the next one."""

from __future__ import annotations

from typing import Any

from erp.celery import app


def _registered() -> dict[str, Any]:
    app.loader.import_default_modules()
    return dict(app.tasks)


def test_every_task_of_ours_declares_a_soft_and_a_hard_time_limit() -> None:
    ours = {name: task for name, task in _registered().items() if not name.startswith("celery.")}
    assert len(ours) >= 13  # ai_agents, correo and erp tasks are all registered

    missing = sorted(
        name
        for name, task in ours.items()
        if not (task.soft_time_limit and task.time_limit and task.soft_time_limit < task.time_limit)
    )

    assert missing == []


def test_celerys_own_tasks_fall_back_to_the_global_limits() -> None:
    soft = app.conf.task_soft_time_limit
    hard = app.conf.task_time_limit

    assert soft is not None
    assert hard is not None
    assert 0 < soft < hard
    builtin = [n for n in _registered() if n.startswith("celery.")]
    assert builtin  # e.g. celery.backend_cleanup, run by beat
    for name in builtin:
        task = app.tasks[name]
        assert (task.soft_time_limit or soft) < (task.time_limit or hard), name

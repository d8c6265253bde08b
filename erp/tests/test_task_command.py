"""`erp.celery.task_command`: a task queued as one Redis command is Celery's own message, and a
real worker runs it (the WhatsApp webhook sends its answers' tasks this way)."""

import base64
import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import redis
from django.conf import settings
from kombu.utils import json as kombu_json

from erp.celery import app, celery_message, task_command
from erp.logging import request_id_var
from erp.testing.factories import TenantFactory

# What differs between two messages of the same task: their own ids.
OWN = {"headers": {"id", "root_id"}, "properties": {"correlation_id", "delivery_tag"}}


def _celerys(name: str, *args: Any) -> tuple[str, dict[str, Any]]:
    """The (queue key, message) Celery builds for this call, captured before it is sent."""
    found = celery_message(name, *args)
    assert found is not None  # captured, not sent by the channel itself
    return found


def _decoded(command: tuple[Any, ...] | None) -> tuple[str, dict[str, Any]]:
    assert command is not None  # a command to send, not queued by Celery itself
    verb, key, payload = command
    assert verb == "LPUSH"
    return key, json.loads(payload)


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k not in OWN}
    for part, own in OWN.items():
        out[part] = {k: v for k, v in message[part].items() if k not in own}
    out["body"] = json.loads(base64.b64decode(message["body"]))
    return out


def test_the_command_carries_celerys_message_with_its_own_ids() -> None:
    token = request_id_var.set("req-task-command")
    try:
        first = _decoded(task_command("erp.ping_database", 7))  # Celery builds this one
        second = _decoded(task_command("erp.ping_database", 8))  # copied from the first
        key, celerys = _celerys("erp.ping_database", 8)
    finally:
        request_id_var.reset(token)

    assert first[0] == second[0] == key == "realtime"
    assert _comparable(second[1]) == _comparable(celerys)
    assert _comparable(second[1])["body"][0] == [8]
    assert second[1]["headers"]["request_id"] == "req-task-command"
    ids = {m["headers"]["id"] for m in (first[1], second[1], celerys)}
    assert len(ids) == 3
    assert second[1]["headers"]["root_id"] == second[1]["headers"]["id"]
    assert second[1]["properties"]["correlation_id"] == second[1]["headers"]["id"]
    assert first[1]["properties"]["delivery_tag"] != second[1]["properties"]["delivery_tag"]


def test_a_copy_encodes_its_arguments_as_celery_does() -> None:
    """A UUID, a datetime or a Decimal is what Celery's own serializer would send (and the
    worker decodes back), in the copied message as in the one Celery built."""
    task_command("erp.ping_database", 1)  # the prototype exists
    for value in (uuid.uuid4(), datetime(2026, 12, 2, 13, 0, tzinfo=UTC), Decimal("1.50")):
        copied = _comparable(_decoded(task_command("erp.ping_database", value))[1])["body"]
        celerys = _comparable(_celerys("erp.ping_database", value)[1])["body"]

        assert copied == celerys
        assert kombu_json.loads(json.dumps(copied))[0] == [value]


def test_in_eager_mode_celery_runs_it_and_there_is_nothing_to_send(db: Any) -> None:
    tenant = TenantFactory.create(slug="eager-command")
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        assert task_command("erp.ping_database", tenant.pk) is None
    finally:
        app.conf.task_always_eager = previous


@pytest.mark.slow
def test_a_real_worker_runs_the_tasks_sent_as_commands(celery_worker_process: Any) -> None:
    token = request_id_var.set("req-from-webhook")
    try:
        commands = [task_command("erp.echo_request_id") for _ in range(2)]
    finally:
        request_id_var.reset(token)
    client = redis.Redis.from_url(settings.REDIS_URL)
    for command in commands:
        assert command is not None
        client.execute_command(*command)
    for command in commands:
        task_id = _decoded(command)[1]["headers"]["id"]
        assert app.AsyncResult(task_id).get(timeout=20) == "req-from-webhook"


@pytest.mark.parametrize(
    "args",
    [
        ("0b6c3f0e-4a4e-4a8e-9f55-3b7f1a2b9c10", "5d0f2c1e-8f3b-4c8d-a1e2-6b7c8d9e0f1a"),
        ("a'b", 'x"y'),
        ("back\\slash",),
        ("ñandú", "\x00"),
        ("x" * 2000,),
        (1, None, "z"),
    ],
)
def test_a_copied_messages_argsrepr_is_celerys_own(args: tuple[Any, ...]) -> None:
    from celery.utils.saferepr import saferepr

    from erp.celery import _argsrepr, app

    assert _argsrepr(args) == saferepr(args, app.amqp.argsrepr_maxsize)


def test_eager_mode_set_in_the_settings_of_a_test_is_obeyed(
    db: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`override_settings` (pytest-django's `settings`) after the process read the setting
    once: Celery runs the task, nothing is left to send."""
    # No value set at run time (`app.conf.task_always_eager = ...`) hides the settings' one.
    monkeypatch.delitem(app.conf.changes or {}, "task_always_eager", raising=False)
    tenant = TenantFactory.create(slug="eager-settings")
    assert task_command("erp.ping_database", tenant.pk) is not None  # read: not eager

    settings.CELERY_TASK_ALWAYS_EAGER = True

    assert app.conf.task_always_eager is True  # Celery's own view follows the settings
    assert task_command("erp.ping_database", tenant.pk) is None

"""The business number -> binding lookup of every webhook POST is cached (Redis, shared by the
web processes) and forgotten when a binding or its agent is saved or deleted: the next POST
obeys the change at once."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ai_agents.channels.whatsapp import bindings
from ai_agents.channels.whatsapp.bindings import binding_for_number, binding_key
from ai_agents.models import ChannelBinding, Message
from ai_agents.services.agents import agent_create
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_A,
    binding_create,
    post,
    text_payload,
    user_messages,
)
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope


def _agent_of(tenant: Any, wamid: str) -> Any:
    with tenant_scope(tenant):
        return Message.objects.get(channel_message_id=wamid).agent_id


@pytest.mark.django_db
def test_the_second_post_reads_no_binding_and_the_cache_holds_no_token(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    post(client, text_payload("hola", "wamid.c1"))
    with CaptureQueriesContext(connection) as queries:
        response = post(client, text_payload("¿sigue ahí?", "wamid.c2"))

    assert response.json() == {"status": "ok", "stored": 1}
    assert not [q for q in queries.captured_queries if "ai_agents_channelbinding" in q["sql"]]
    raw = cache.get_many([binding_key(NUMBER_A)])
    assert raw and "EAAG-token-a" not in repr(raw[binding_key(NUMBER_A)])
    assert [m.content for m in user_messages(tenant_a)] == ["hola", "¿sigue ahí?"]


@pytest.mark.django_db
def test_a_binding_moved_to_another_agent_takes_the_next_message_there(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    post(client, text_payload("hola", "wamid.m1"))
    first = wa_binding.agent_id
    other = agent_create(tenant=tenant_a, data={"name": "Marta", "system_prompt": "Eres Marta."})
    wa_binding.agent = other
    wa_binding.save()
    post(client, text_payload("hola otra vez", "wamid.m2"))

    assert (_agent_of(tenant_a, "wamid.m1"), _agent_of(tenant_a, "wamid.m2")) == (first, other.pk)


@pytest.mark.django_db
def test_a_deactivated_binding_refuses_the_very_next_message_and_takes_them_again_after(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    assert post(client, text_payload("uno", "wamid.d1")).json()["stored"] == 1
    wa_binding.is_active = False
    wa_binding.save(update_fields=["is_active"])
    refused = post(client, text_payload("dos", "wamid.d2"))
    wa_binding.is_active = True
    wa_binding.save(update_fields=["is_active"])
    taken = post(client, text_payload("tres", "wamid.d3"))

    assert (refused.status_code, refused.json()["stored"], taken.json()["stored"]) == (200, 0, 1)
    assert [m.content for m in user_messages(tenant_a)] == ["uno", "tres"]


@pytest.mark.django_db
def test_a_number_given_to_another_tenant_routes_there_at_once(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any, tenant_b: Any
) -> None:
    unknown = "555000111"
    post(client, text_payload("¿hay alguien?", "wamid.n0", number=unknown))  # cached: nobody
    post(client, text_payload("hola A", "wamid.n1"))
    wa_binding.delete()
    binding_create(tenant_b, NUMBER_A, token="EAAG-token-b")
    binding_create(tenant_b, unknown, token="EAAG-token-b2")
    post(client, text_payload("hola B", "wamid.n2"))
    post(client, text_payload("¿y ahora?", "wamid.n3", number=unknown))

    assert [m.content for m in user_messages(tenant_a)] == ["hola A"]
    assert [m.content for m in user_messages(tenant_b)] == ["hola B", "¿y ahora?"]


@pytest.mark.django_db
def test_a_new_number_forgets_the_old_one(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    post(client, text_payload("hola", "wamid.o1"))
    wa_binding.phone_number_id = "777888999"
    wa_binding.save()

    assert post(client, text_payload("¿sigue?", "wamid.o2")).json()["stored"] == 0
    assert post(client, text_payload("nuevo", "wamid.o3", number="777888999")).json() == {
        "status": "ok",
        "stored": 1,
    }


@pytest.mark.django_db
def test_the_commit_forgets_a_binding_another_process_cached_before_it(
    wa_binding: ChannelBinding, tenant_a: Any, django_capture_on_commit_callbacks: Any
) -> None:
    binding_for_number(NUMBER_A)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        wa_binding.is_active = False
        wa_binding.save(update_fields=["is_active"])
        # Another web process reads the row still committed (active) and caches it.
        cache.set(
            binding_key(NUMBER_A), ChannelBinding.objects.unscoped().get(pk=wa_binding.pk), 300
        )

    assert cache.get(binding_key(NUMBER_A)) is None
    assert binding_for_number(NUMBER_A) is None
    assert binding_for_number(NUMBER_A, active=False) == wa_binding


@pytest.mark.django_db
def test_a_binding_cached_by_a_release_with_other_fields_is_not_misread(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rolling deploy that adds a field: the old web processes still cache rows without it,
    and the new ones, sharing the cache, must not read those values by their own names."""
    newest = bindings._names

    def older_release(model: Any) -> tuple[str, ...]:
        names = newest(model)
        return tuple(n for n in names if n != "budget_cheaper_model") if model is Tenant else names

    monkeypatch.setattr(bindings, "_names", older_release)
    assert binding_for_number(NUMBER_A) is not None  # the old release caches its rows
    monkeypatch.setattr(bindings, "_names", newest)

    response = post(client, text_payload("hola", "wamid.r1"))

    assert response.json() == {"status": "ok", "stored": 1}
    assert [m.content for m in user_messages(tenant_a)] == ["hola"]
    found = binding_for_number(NUMBER_A)
    assert found is not None and found.agent.tenant.is_active == tenant_a.is_active


@pytest.mark.django_db
def test_with_the_cache_down_a_post_is_stored_and_asks_the_cache_for_its_binding_once(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis down: each cache call may wait for its connection to fail, so the POST's one
    read failing is enough; the binding comes from the database."""
    asked: list[str] = []

    def down(name: str) -> Any:
        def call(key: Any, *args: Any, **kwargs: Any) -> Any:
            asked.extend(f"{name} {k}" for k in ([key] if isinstance(key, str) else key))
            raise ConnectionError("Redis down")

        return call

    for name in ("get", "get_many", "set", "add", "delete", "delete_many", "incr"):
        monkeypatch.setattr(cache, name, down(name))

    response = post(client, text_payload("hola", "wamid.down1"))

    assert (response.status_code, response.json()["stored"]) == (200, 1)
    assert [m.content for m in user_messages(tenant_a)] == ["hola"]
    assert [a for a in asked if a.endswith(binding_key(NUMBER_A))] == [
        f"get_many {binding_key(NUMBER_A)}"
    ]


def _queued_answers() -> list[list[Any]]:
    """The args of every `channel_conversation_answer` waiting on the real broker's realtime
    queue (kombu's Redis list)."""
    import base64
    import json

    from erp.celery import app

    with app.connection_for_write() as broker:
        channel: Any = broker.default_channel  # kombu's Redis channel: its redis client
        raw = channel.client.lrange("realtime", 0, -1)
    found = []
    for item in raw:
        message = json.loads(item)
        if message["headers"].get("task") == "ai_agents.channel_conversation_answer":
            found.append(json.loads(base64.b64decode(message["body"]))[0])
    return found


@pytest.mark.django_db
def test_a_post_of_several_messages_queues_one_answer_per_conversation_after_storing_them(
    client: Client,
    wa_binding: ChannelBinding,
    tenant_a: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    data = text_payload("uno", "wamid.q1")
    messages = data["entry"][0]["changes"][0]["value"]["messages"]
    messages.append({**messages[0], "id": "wamid.q2", "text": {"body": "dos"}})
    other = text_payload("soy otra", "wamid.q3", wa_id="34600999888")
    data["entry"].append(other["entry"][0])
    before = _queued_answers()

    with django_capture_on_commit_callbacks(execute=True) as on_commit:
        assert post(client, data).json() == {"status": "ok", "stored": 3}
    queued = [args for args in _queued_answers() if args not in before]
    with tenant_scope(tenant_a):
        stored = {m.channel_message_id: m for m in Message.objects.filter(role="user")}
    assert sorted(queued) == sorted(
        [
            [str(stored["wamid.q2"].conversation_id), str(stored["wamid.q2"].pk)],
            [str(stored["wamid.q3"].conversation_id), str(stored["wamid.q3"].pk)],
        ]
    )
    assert len([c for c in on_commit if c.__qualname__.startswith("answers_enqueue")]) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, data).json() == {"status": "ok", "stored": 0}  # redelivered
    assert len([args for args in _queued_answers() if args not in before]) == 2


@pytest.mark.django_db(transaction=True)
def test_a_post_tells_redis_its_events_and_answers_in_one_round_trip(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any, monkeypatch: Any
) -> None:
    from ai_agents.services import inbox_events

    trips: list[list[Any]] = []
    real_trip = inbox_events._trip

    def trip(items: Any) -> None:
        trips.append(list(items))
        real_trip(items)

    monkeypatch.setattr(inbox_events, "_trip", trip)
    data = text_payload("uno", "wamid.t1")
    other = text_payload("soy otra", "wamid.t2", wa_id="34600999888")
    data["entry"].append(other["entry"][0])
    before = _queued_answers()

    assert post(client, data).json() == {"status": "ok", "stored": 2}

    assert len(trips) == 1  # the two messages' events and their two answers' tasks
    [items] = trips
    assert sorted(type(item).__name__ for item in items) == ["_Commands", "_Event", "_Event"]
    with tenant_scope(tenant_a):
        stored = list(Message.objects.filter(role="user").order_by("created_at"))
    queued = [args for args in _queued_answers() if args not in before]
    assert sorted(queued) == sorted([str(m.conversation_id), str(m.pk)] for m in stored)
    events = inbox_events._redis().xrange(inbox_events.stream_key(tenant_a.pk))
    assert {fields[b"conversation_id"].decode() for _, fields in events} >= {
        str(m.conversation_id) for m in stored
    }


def _listening(mirror: Any) -> None:
    """Listening, every forget published so far heard (the fixtures' too: one heard late
    would drop what the test's first POST kept)."""
    assert mirror.settled(), "the mirror never started listening"


@pytest.mark.django_db
def test_a_known_number_and_thread_ask_redis_nothing_and_obey_another_process_at_once(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process's copy of the binding (and of "no options offered" for the thread) saves
    the POST its cache read; another process moving the binding (its forget arrives over
    Redis publish/subscribe) is obeyed by the next POST here."""
    from ai_agents.channels.whatsapp import offered

    _listening(bindings._local)
    _listening(offered._local)
    post(client, text_payload("hola", "wamid.l1"))  # read once, kept here
    reads: list[Any] = []
    real_get_many = cache.get_many

    def get_many(keys: Any) -> Any:
        reads.append(keys)
        return real_get_many(keys)

    monkeypatch.setattr(cache, "get_many", get_many)

    post(client, text_payload("ok", "wamid.l2"))  # short: may name an option
    assert reads == []

    other = agent_create(tenant=tenant_a, data={"name": "Marta", "system_prompt": "Eres Marta."})
    # Another web process saves the binding: its row changes, the Redis copy goes, and the
    # forget is published (no signal runs in this process).
    ChannelBinding.objects.unscoped().filter(pk=wa_binding.pk).update(agent=other)
    cache.delete(binding_key(NUMBER_A))
    redis.Redis.from_url(settings.REDIS_URL).publish(
        bindings._local.channel, json.dumps([binding_key(NUMBER_A)])
    )
    deadline = time.monotonic() + 5
    while bindings.local_has(NUMBER_A) and time.monotonic() < deadline:
        time.sleep(0.01)
    post(client, text_payload("¿me atiende Marta?", "wamid.l3"))

    assert (_agent_of(tenant_a, "wamid.l2"), _agent_of(tenant_a, "wamid.l3")) == (
        wa_binding.agent_id,
        other.pk,
    )


@pytest.mark.django_db
def test_a_read_of_the_old_row_that_stores_it_after_the_commits_forget_leaves_nothing_stale(
    wa_binding: ChannelBinding, tenant_a: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A webhook reads the binding's row just before an admin's deactivation commits, and
    would cache that old row just after the commit's forget went out: nothing stale may stay
    behind, in Redis or here, for the next POST of any process to obey."""
    _listening(bindings._local)
    since = bindings.local_generation()  # the webhook's read starts...
    committed: list[bool] = []

    def commit_after_the_read(execute: Any, sql: str, *args: Any) -> Any:
        result = execute(sql, *args)  # ...and reads the row still active
        if "ai_agents_channelbinding" in sql and not committed:
            committed.append(True)
            with django_capture_on_commit_callbacks(execute=True):  # the admin's commit
                wa_binding.is_active = False
                wa_binding.save(update_fields=["is_active"])
        return result

    with connection.execute_wrapper(commit_after_the_read):
        read = binding_for_number(NUMBER_A, cached=None, since=since)

    assert committed and read is not None  # what it read before the commit
    assert cache.get(binding_key(NUMBER_A)) is None
    assert binding_for_number(NUMBER_A) is None
    assert binding_for_number(NUMBER_A, active=False) == wa_binding


@pytest.mark.django_db
def test_a_value_read_by_a_caller_that_gave_no_generation_is_not_kept(
    wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    """Without `since`, nobody knows whether a forget came between the caller's read and
    this call: what it read is used, kept neither here nor written back to Redis."""
    _listening(bindings._local)
    key = binding_key(NUMBER_A)
    rows = bindings._rows_of(ChannelBinding.objects.unscoped().get(pk=wa_binding.pk))

    assert binding_for_number(NUMBER_A, cached=rows) == wa_binding
    assert binding_for_number(NUMBER_A, cached=None) == wa_binding  # from the database

    assert not bindings.local_has(NUMBER_A)
    assert cache.get(key) is None

"""Merged bursts (ai_agents/conversations/burst.py): messages a WhatsApp customer sends in a row
within the agent's quiet window get ONE reply that answers all of them; a redelivery adds
nothing, a message arriving while the reply is generated gets its own next reply, a quiet
window of 0 answers each message, the rate limit counts messages, tenants never mix."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from ai_agents.models import Agent, Message
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_B,
    Line,
    binding_create,
    post,
    text_payload,
    user_messages,
    worker_env,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing.celery_worker import worker_running
from erp.testing.deadlines import wait_until

BURST = ["hola", "una pregunta", "¿tienen envío a Saltillo?"]


def _window(agent: Any, quiet_ms: int, max_ms: int = 8000, **more: Any) -> None:
    agent.processing_config = {
        **agent.processing_config,
        "burst_quiet_ms": quiet_ms,
        "burst_max_ms": max_ms,
        **more,
    }
    agent.save(update_fields=["processing_config"])


def _recheck_window(agent: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    """A quiet window the re-check's task meets inside its last BURST_EARLY_S, widened (1.5 s
    early, due 1.4 s after the first message) so a slow machine's reads before the re-check
    looks (conversation, typing, media) cannot use the window up. Returns it in ms."""
    from ai_agents import tasks

    monkeypatch.setattr(tasks, "BURST_EARLY_S", 1.5)
    quiet_ms = int(tasks.BURST_EARLY_S * 1000) - 100
    _window(agent, quiet_ms, 8000)
    return quiet_ms


def _together(texts: list[str], prefix: str, **kw: Any) -> dict[str, Any]:
    """One webhook delivery carrying `texts` from one customer (ids `wamid.<prefix>-<n>`)."""
    data = text_payload(texts[0], f"wamid.{prefix}-0", **kw)
    messages = data["entry"][0]["changes"][0]["value"]["messages"]
    for n, text in enumerate(texts[1:], start=1):
        message = copy.deepcopy(messages[0])
        message.update(id=f"wamid.{prefix}-{n}", text={"body": text})
        messages.append(message)
    return data


def _model_saw(fake_google: Any, n: int) -> str:
    return json.dumps(fake_google.generate_requests[n], ensure_ascii=False)


def _replies(tenant: Any) -> list[Message]:
    with tenant_scope(tenant):
        return list(Message.objects.filter(role="assistant").order_by("created_at"))


@pytest.mark.slow
def test_a_burst_gets_one_reply_after_the_quiet_window_and_no_worker_slot_waits_it_out(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: Any,
    fake_graph: Any,
    client: Any,
) -> None:
    # given: a quiet window of 2 s (webhooks 0.3 s apart stay one burst on a busy machine), and
    # a worker with ONE thread (a task sleeping through a window would keep every other
    # conversation waiting behind it)
    _window(wa_binding.agent, 2000, 6000)
    fake_google.default = fake_google.reply_json({"action": "respond", "answer": "Sí, enviamos."})
    with worker_running(
        tmp_path,
        pool=("-P", "threads", "-c", "1"),
        prefix="burst",
        **worker_env(fake_google, fake_graph),
    ):
        # when: Ana writes three messages 0.3 s apart; Beto writes once right after her first
        for n, text in enumerate(BURST):
            assert post(client, text_payload(text, f"wamid.burst-{n}")).status_code == 200
            if n == 0:
                post(client, text_payload("¿Abren hoy?", "wamid.beto-0", wa_id="34600000777"))
            last = time.monotonic()
            time.sleep(0.3 if n < len(BURST) - 1 else 0)
        wait_until(lambda: len(fake_graph.sent) >= 2, what="two replies", timeout=30)
        waited = time.monotonic() - last
        # a redelivery of one of Ana's messages changes nothing
        redelivered = post(client, text_payload(BURST[1], "wamid.burst-1"))
        time.sleep(2.0)  # a second reply, or a late re-check's answer, would be here by now

    # then: one reply each; Beto's (due first) came first, Ana's after her quiet window
    assert redelivered.json()["stored"] == 0
    assert [b["to"] for b in fake_graph.sent] == ["34600000777", "16505551234"]
    assert waited >= 1.9
    assert len(fake_google.generate_requests) == 2
    assert "hola\\nuna pregunta\\n¿tienen envío a Saltillo?" in _model_saw(fake_google, 1)
    # the typing indicator went out on her messages while she wrote, before the reply
    assert {r["message_id"] for r in fake_graph.read_marks} >= {"wamid.burst-0", "wamid.burst-2"}
    anas = [
        m for m in user_messages(tenant_a) if (m.channel_message_id or "").startswith("wamid.burst")
    ]
    assert all(m.metadata["result"]["reply"]["text"] == "Sí, enviamos." for m in anas)
    reply = next(r for r in _replies(tenant_a) if r.reply_to_id == anas[-1].pk)
    assert reply.metadata["burst"] == [str(m.pk) for m in anas]


@pytest.mark.slow
def test_a_message_arriving_while_the_reply_is_generated_gets_its_own_next_reply(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: Any,
    fake_graph: Any,
    client: Any,
) -> None:
    _window(wa_binding.agent, 300, 2000)
    fake_google.push(
        fake_google.reply_json(
            {"action": "respond", "answer": "Hola, ¿en qué le ayudo?"}, delay=1.5
        ),
        fake_google.reply_json({"action": "respond", "answer": "Sí, a Saltillo también."}),
    )
    with worker_running(
        tmp_path,
        pool=("-P", "threads", "-c", "4"),
        prefix="during",
        **worker_env(fake_google, fake_graph),
    ):
        post(client, text_payload("hola", "wamid.during-0"))
        wait_until(
            lambda: len(fake_google.generate_requests) >= 1, what="the model call", timeout=30
        )
        post(client, text_payload("¿envían a Saltillo?", "wamid.during-1"))
        wait_until(lambda: len(fake_graph.sent) >= 2, what="two replies", timeout=30)
        time.sleep(1.5)  # a third reply would be here by now

    assert [b["text"]["body"] for b in fake_graph.sent] == [
        "Hola, ¿en qué le ayudo?",
        "Sí, a Saltillo también.",
    ]
    assert "Saltillo" not in _model_saw(fake_google, 0)
    first, second = user_messages(tenant_a)
    assert first.metadata["result"]["reply"]["text"] == "Hola, ¿en qué le ayudo?"
    assert second.metadata["result"]["reply"]["text"] == "Sí, a Saltillo también."
    assert [r.reply_to_id for r in _replies(tenant_a)] == [first.pk, second.pk]


@pytest.mark.django_db
def test_a_quiet_window_of_zero_answers_every_message_on_its_own(line: Line) -> None:
    _window(line_agent(line), 0, 0)
    for text in ("Hola.", "Sí, enviamos."):
        line.google.push(line.google.reply_json({"action": "respond", "answer": text}))

    line.customer_sends(_together(BURST[:2], "zero"))

    assert [b["text"]["body"] for b in line.graph.sent] == ["Hola.", "Sí, enviamos."]
    assert len(line.google.generate_requests) == 2


@pytest.mark.django_db
def test_the_rate_limit_counts_the_messages_of_a_burst_not_its_replies(line: Line) -> None:
    _window(line_agent(line), 2500, 8000, messages_per_minute=3)
    line.google.push(line.google.reply_json({"action": "respond", "answer": "Hola."}))

    line.customer_sends(_together(BURST[:2], "rate-a"))  # 2 messages: within 3 a minute
    line.customer_sends(_together(BURST[:2], "rate-b"))  # 4 messages: past the limit

    assert len(line.google.generate_requests) == 1
    bodies = [b["text"]["body"] for b in line.graph.sent]
    assert bodies[0] == "Hola." and "muy rápido" in bodies[1] and len(bodies) == 2
    assert all("result" in m.metadata for m in user_messages(line.tenant))


@pytest.mark.django_db
def test_bursts_of_one_number_in_two_tenants_never_mix(line: Line, tenant_b: Any) -> None:
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    line.google.push(
        line.google.reply_json({"action": "respond", "answer": "Para A."}),
        line.google.reply_json({"action": "respond", "answer": "Para B."}),
    )

    line.customer_sends(_together(BURST[:2], "ten-a"))
    line.customer_sends(_together(["¿y en Monterrey?"], "ten-b", number=NUMBER_B))

    assert [b["text"]["body"] for b in line.graph.sent] == ["Para A.", "Para B."]
    assert "hola\\nuna pregunta" in _model_saw(line.google, 0)
    assert "una pregunta" not in _model_saw(line.google, 1)
    assert [len(r.metadata.get("burst", [])) for r in _replies(line.tenant)] == [2]
    assert [m.content for m in user_messages(tenant_b)] == ["¿y en Monterrey?"]
    assert len(_replies(tenant_b)) == 1


def line_agent(line: Line) -> Agent:
    with tenant_scope(line.tenant):
        return Agent.objects.get()


@pytest.mark.django_db
def test_the_quiet_window_is_a_validated_setting(api_a: Any) -> None:
    for bad, key in (
        ({"burst_quiet_ms": -1}, "burst_quiet_ms"),
        ({"burst_quiet_ms": "2500"}, "burst_quiet_ms"),
        ({"burst_max_ms": 30001}, "burst_max_ms"),
        ({"burst_quiet_ms": 3000, "burst_max_ms": 2000}, "burst_max_ms"),
    ):
        response = api_a.post(
            "/api/v1/agents",
            {"name": "X", "system_prompt": "Eres X.", "processing_config": bad},
            format="json",
        )
        assert response.status_code == 400, bad
        assert key in str(response.json())
    good = api_a.post(
        "/api/v1/agents",
        {"name": "X", "system_prompt": "Eres X.", "processing_config": {"burst_quiet_ms": 0}},
        format="json",
    )
    assert good.status_code == 201
    assert good.json()["processing_config"]["burst_max_ms"] == 8000


def test_a_burst_is_due_after_the_quiet_window_and_never_past_the_longest_wait() -> None:
    from datetime import UTC, datetime, timedelta

    from ai_agents.conversations.burst import burst_due_s

    start = datetime(2026, 1, 1, tzinfo=UTC)
    windows = {"burst_quiet_ms": 2500, "burst_max_ms": 8000}

    def due(first: float, last: float, now: float) -> float:
        at = [start + timedelta(seconds=s) for s in (first, last, now)]
        return burst_due_s(first=at[0], last=at[1], processing=windows, now=at[2])

    assert due(0, 0, 0) == 2.5
    assert due(0, 1, 2) == 1.5
    assert due(0, 7, 7) == 1.0  # 8 s after the first, not 2.5 s after the last
    assert due(0, 1, 10) == 0.0


@pytest.mark.django_db
def test_a_waiting_burst_says_when_it_is_due_its_newest_message_and_its_text(
    wa_binding: Any,
) -> None:
    from ai_agents.conversations.burst import burst_wait
    from ai_agents.conversations.store import conversation_load
    from ai_agents.tests.channels.whatsapp.support import stored

    first = stored(wa_binding.agent, BURST[0], "wamid.wait-0", wa_binding)
    second = stored(wa_binding.agent, BURST[1], "wamid.wait-1", wa_binding)
    conversation = conversation_load(first.conversation_id)
    assert conversation is not None

    with tenant_scope(wa_binding.tenant):
        wait = burst_wait(conversation)
        _window(wa_binding.agent, 0, 0)
        assert burst_wait(conversation_load(first.conversation_id)) is None  # type: ignore[arg-type]  # loaded just above: not None

    assert wait is not None
    assert 2.0 < wait.seconds <= 2.5
    assert (wait.newest_id, wait.text) == (str(second.pk), "hola\nuna pregunta")


@pytest.mark.django_db
def test_a_recheck_queued_before_the_burst_is_due_waits_for_it_then_answers(
    line: Line, wa_binding: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-check is queued BURST_EARLY_S before the burst is due (its reads done by then):
    it waits the rest out and the reply is never stored before the quiet window ends."""
    from ai_agents import tasks
    from ai_agents.tests.channels.whatsapp.support import respond, stored

    quiet_ms = _recheck_window(wa_binding.agent, monkeypatch)
    respond(line.google, "Sí, enviamos.")
    first = stored(wa_binding.agent, BURST[0], "wamid.early-0", wa_binding)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(tasks, "_sleep", sleep)

    tasks.channel_conversation_answer(str(first.conversation_id), str(first.pk), True)

    [reply] = _replies(line.tenant)
    # It waited (once, the rest of the window), not answered at once past a used-up window.
    assert len(waits) == 1 and 0 < waits[0] <= tasks.BURST_EARLY_S + tasks.BURST_CLOCK_S
    assert (reply.created_at - first.created_at).total_seconds() >= quiet_ms / 1000
    assert [b["text"]["body"] for b in line.graph.sent] == ["Sí, enviamos."]


@pytest.mark.django_db
def test_a_message_arriving_while_the_recheck_waits_starts_the_burst_again(
    line: Line, wa_binding: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agents import tasks
    from ai_agents.conversations.burst import burst_wait
    from ai_agents.conversations.store import conversation_load
    from ai_agents.tests.channels.whatsapp.support import stored

    _recheck_window(wa_binding.agent, monkeypatch)
    first = stored(wa_binding.agent, BURST[0], "wamid.again-0", wa_binding)
    later: list[Message] = []

    def customer_writes_meanwhile(seconds: float) -> None:
        # At the end of the wait, so the new message's quiet window is still open (whatever
        # the machine's speed) when the re-check looks again.
        time.sleep(seconds)
        later.append(stored(wa_binding.agent, BURST[1], "wamid.again-1", wa_binding))

    monkeypatch.setattr(tasks, "_sleep", customer_writes_meanwhile)

    assert tasks.channel_conversation_answer(str(first.conversation_id), str(first.pk), True) == []

    assert later and _replies(line.tenant) == [] and line.google.generate_requests == []
    conversation = conversation_load(first.conversation_id)
    assert conversation is not None
    with tenant_scope(line.tenant):
        wait = burst_wait(conversation)
    assert wait is not None and wait.newest_id == str(later[0].pk)  # its task re-checks

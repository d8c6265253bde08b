"""The real-time worker on Celery's threads pool (as `make run` and compose start it) answers
many WhatsApp conversations at once: their model calls overlap instead of queueing behind a
couple of processes, and each message is still answered exactly once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ai_agents.models import Message
from ai_agents.tests.channels.whatsapp.support import post, text_payload, worker_env
from erp.testing.celery_worker import worker_running
from erp.testing.deadlines import wait_until

CONVERSATIONS = 8
MODEL_SECONDS = 1.0


@pytest.mark.slow
def test_whatsapp_conversations_are_answered_at_once_on_the_threads_pool_each_once(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: Any,
    fake_graph: Any,
    client: Any,
) -> None:
    # given: a model that takes a second, and a worker with more threads than conversations
    fake_google.default = fake_google.reply_json(
        {"action": "respond", "answer": "Abrimos a las 9."}, delay=MODEL_SECONDS
    )
    env = worker_env(fake_google, fake_graph)
    contacts = [str(34600000100 + n) for n in range(CONVERSATIONS)]
    with worker_running(tmp_path, pool=("-P", "threads", "-c", "16"), prefix="threads", **env):
        # when: every contact writes at once
        for n, wa_id in enumerate(contacts):
            response = post(client, text_payload(f"¿Abren hoy? {n}", f"wamid.thr-{n}", wa_id=wa_id))
            assert response.status_code == 200
        wait_until(
            lambda: len(fake_graph.sent) >= CONVERSATIONS,
            what=f"{CONVERSATIONS} replies at the Graph API",
            timeout=60,
        )
        time.sleep(MODEL_SECONDS)  # a second reply to anyone would arrive by now

    # then: the model calls overlapped, and each contact got one reply to its one message
    assert fake_google.server.max_in_flight >= 6
    assert len(fake_google.generate_requests) == CONVERSATIONS
    assert sorted(body["to"].lstrip("+") for body in fake_graph.sent) == contacts
    replies = Message.objects.for_tenant(tenant_a).filter(role=Message.Role.ASSISTANT)
    inbound = Message.objects.for_tenant(tenant_a).filter(role=Message.Role.USER)
    assert sorted(replies.values_list("reply_to_id", flat=True)) == sorted(
        inbound.values_list("pk", flat=True)
    )
    assert inbound.count() == CONVERSATIONS

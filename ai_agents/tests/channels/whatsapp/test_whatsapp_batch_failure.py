"""A webhook POST whose batch breaks halfway: the messages stored before the failure are still
answered at once. Meta delivers the POST again, but then they are duplicates (not queued
again), so their answer must be queued by the POST that stored them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from ai_agents.channels.whatsapp import adapter
from ai_agents.models import ChannelBinding, Message
from ai_agents.tests.channels.whatsapp.support import post, text_payload
from ai_agents.tests.channels.whatsapp.test_whatsapp_binding_cache import _queued_answers
from erp.tenancy.scoping import tenant_scope


@pytest.mark.django_db
def test_a_batch_that_fails_halfway_still_queues_the_answers_of_what_it_stored(
    client: Client,
    wa_binding: ChannelBinding,
    tenant_a: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    data = text_payload("uno", "wamid.f1")
    other = text_payload("soy otra", "wamid.f2", wa_id="34600999888")
    data["entry"].append(other["entry"][0])
    accept = adapter.inbound_accept

    def second_breaks(**kwargs: Any) -> Any:
        if kwargs["inbound"].channel_message_id == "wamid.f2":
            raise RuntimeError("the database went away")  # a failure after the first stored
        return accept(**kwargs)

    monkeypatch.setattr(adapter, "inbound_accept", second_breaks)
    before = _queued_answers()

    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, data).status_code == 500  # Meta will deliver the POST again

    with tenant_scope(tenant_a):
        first = Message.objects.get(channel_message_id="wamid.f1")
    queued = [args for args in _queued_answers() if args not in before]
    assert queued == [[str(first.conversation_id), str(first.pk)]]

    monkeypatch.setattr(adapter, "inbound_accept", accept)
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, data).json() == {"status": "ok", "stored": 1}  # Meta's retry
    queued = [args for args in _queued_answers() if args not in before]
    assert len(queued) == 2  # the first once, the second now

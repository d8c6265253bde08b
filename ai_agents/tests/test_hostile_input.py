"""Availability under hostile input: a huge customer message is cut to its channel's limit
before any expensive work (triggers, the query embedding, full-text search, the prompt), kept
whole in the database, and answered in bounded time."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import Message
from ai_agents.services.agents import agent_update
from ai_agents.services.knowledge import document_ingest, knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from ai_agents.tests.channels.whatsapp.support import Line, post, respond, text_payload
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph

SHIPPING = (
    "# Envíos\n\nLos envíos a Monterrey tardan de 2 a 3 días hábiles. "
    "El envío es gratis en compras mayores a 999 pesos.\n"
)
HUGE = ("¿Cuánto tarda el envío a Monterrey? Necesito saberlo hoy mismo. " * 4000)[:200_000]


def _with_shipping_kb(binding: Any) -> None:
    kb = knowledge_base_create(tenant=binding.tenant, name="FAQ")
    added = document_add(kb=kb, data=SHIPPING.encode(), filename="envios.md", enqueue=False)
    document_ingest(document=added.document)
    agent_update(agent=binding.agent, data={"knowledge_bases": [str(kb.pk)]})


def _user_turn(request: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in request["contents"][-1]["parts"])


@pytest.mark.django_db
@pytest.mark.timeout(600)
def test_a_200000_character_whatsapp_text_is_cut_before_retrieval_and_prompt(
    line: Line,
    wa_binding: Any,
) -> None:
    _with_shipping_kb(wa_binding)
    respond(line.google, "De 2 a 3 días hábiles.")

    started = time.monotonic()
    response = line.customer_sends(text_payload(HUGE, "wamid.huge-1"))
    elapsed = time.monotonic() - started

    assert response.status_code == 200
    assert [b["text"]["body"] for b in line.graph.sent] == ["De 2 a 3 días hábiles."]
    assert elapsed < 30, f"answered in {elapsed:.1f} s"
    (request,) = line.google.generate_requests
    turn = _user_turn(request)
    assert turn.startswith(HUGE[:4096])
    assert HUGE[:4097] not in turn
    assert "200000" in turn  # the model is told the message was cut, and from how long
    assert len(turn) < 4096 + 200
    with tenant_scope(line.tenant):
        inbound = Message.objects.get(role="user")
        reply = Message.objects.get(role="assistant")
    assert inbound.content == HUGE  # stored whole: nothing the customer wrote is lost
    assert reply.metadata["input_truncated"] == {"chars": 200_000, "kept": 4096}
    assert reply.rag_chunks_used  # the cut question still found the shipping passage


@pytest.mark.django_db
def test_a_huge_earlier_message_reaches_the_next_prompt_cut_to_the_channel_limit(
    client: Client,
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    respond(fake_google, "De 2 a 3 días hábiles.")
    respond(fake_google, "A Guadalajara, 3 días.")
    with run_tasks():  # answered before the next one arrives (together they are one burst)
        post(client, text_payload(HUGE, "wamid.huge-1"))
    with run_tasks():
        post(client, text_payload("¿Y a Guadalajara?", "wamid.short-2"))

    assert [b["text"]["body"] for b in fake_graph.sent] == [
        "De 2 a 3 días hábiles.",
        "A Guadalajara, 3 días.",
    ]
    second = fake_google.generate_requests[1]
    turns = ["".join(p.get("text", "") for p in c["parts"]) for c in second["contents"]]
    # (earlier turns start with their time, "[2026-11-29 15:25] ")
    untimed = [re.sub(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d\] ", "", t) for t in turns]
    assert untimed == [HUGE[:4096], "De 2 a 3 días hábiles.", "¿Y a Guadalajara?"]


def test_the_pipeline_limits_match_what_each_channel_accepts() -> None:
    from ai_agents.api.agents import MessageInputSerializer
    from ai_agents.channels.email import parse as email_parse
    from ai_agents.channels.webchat import visitor as webchat
    from ai_agents.rules.input_bound import INPUT_MAX_CHARS

    assert INPUT_MAX_CHARS == {"api": 8000, "webchat": 4000, "email": 8000, "whatsapp": 4096}
    assert MessageInputSerializer().fields["text"].max_length == INPUT_MAX_CHARS["api"]  # type: ignore[attr-defined]  # a CharField
    assert INPUT_MAX_CHARS["webchat"] == webchat.TEXT_MAX_CHARS
    assert INPUT_MAX_CHARS["email"] == email_parse.TEXT_LIMIT


def test_input_bound_keeps_a_message_at_the_limit_and_cuts_one_past_it() -> None:
    from ai_agents.rules.input_bound import input_bound

    assert input_bound("a" * 4096, "whatsapp") == ("a" * 4096, None)
    assert input_bound("a" * 4097, "whatsapp") == ("a" * 4096, 4097)
    assert input_bound("b" * 4001, "a-new-channel") == ("b" * 4000, 4001)  # the default
    assert input_bound("", "email") == ("", None)


def test_a_search_query_is_cut_to_2000_characters() -> None:
    from ai_agents.knowledge.embeddings import query_text

    assert query_text("  hola  ") == "hola"
    assert query_text("x" * 1999 + " " + "y" * 5000) == "x" * 1999
    assert len(query_text("z" * 200_000)) == 2000

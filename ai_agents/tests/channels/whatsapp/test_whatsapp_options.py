"""An answer's `options` on WhatsApp, against the fake Graph API that refuses (131009) what
Meta refuses: 2-3 short options as reply buttons, more (or longer titles) as a list, more than
10 cut to 10, a long answer sent as text with its last part as the interactive body; and the
customer's button_reply / list_reply (the reference payloads) stored as their text with the
option id, and answered; a typed "2" or title chooses the same way."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.channels.whatsapp.graph import GraphClient
from ai_agents.models import Message
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_A,
    Line,
    bot_reply,
    payload,
    respond,
    text_payload,
    user_messages,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import FakeGraph


def _answer(line: Line, answer: str, options: list[Any]) -> Message:
    """The customer writes; the model answers `answer` with `options`; returns the reply."""
    line.google.push(
        line.google.reply_json({"action": "respond", "answer": answer, "options": options})
    )
    line.customer_sends(payload("text"))
    return bot_reply(line.tenant)


def _opts(*titles: str) -> list[dict[str, str]]:
    return [{"id": f"o{n}", "title": t} for n, t in enumerate(titles, start=1)]


@pytest.mark.django_db
def test_two_short_options_go_out_as_reply_buttons_under_the_answer(line: Line) -> None:
    reply = _answer(line, "¿Recoge en tienda o se lo enviamos?", _opts("Recoger", "Envío"))

    [sent] = line.graph.sent
    assert sent["type"] == "interactive"
    assert sent["interactive"] == {
        "type": "button",
        "body": {"text": "¿Recoge en tienda o se lo enviamos?"},
        "action": {
            "buttons": [
                {"type": "reply", "reply": {"id": "o1", "title": "Recoger"}},
                {"type": "reply", "reply": {"id": "o2", "title": "Envío"}},
            ]
        },
    }
    assert line.graph.rejected == []
    assert reply.delivery_status == "sent"
    assert reply.metadata["options"] == [
        {"id": "o1", "title": "Recoger"},
        {"id": "o2", "title": "Envío"},
    ]


@pytest.mark.django_db
def test_three_options_are_buttons_and_four_to_ten_a_list(line: Line) -> None:
    _answer(line, "Elija talla.", _opts("S", "M", "L"))
    assert line.graph.sent[-1]["interactive"]["type"] == "button"
    assert len(line.graph.sent[-1]["interactive"]["action"]["buttons"]) == 3

    for count in (4, 10):
        line.graph.reset()
        with tenant_scope(line.tenant):
            Message.objects.all().delete()
        _answer(line, "Elija un día.", _opts(*[f"Día {n}" for n in range(1, count + 1)]))
        [sent] = line.graph.sent
        listing = sent["interactive"]
        assert listing["type"] == "list"
        assert listing["body"] == {"text": "Elija un día."}
        [section] = listing["action"]["sections"]
        assert [r["title"] for r in section["rows"]] == [f"Día {n}" for n in range(1, count + 1)]
        assert listing["action"]["button"] == "Ver opciones"
        assert line.graph.rejected == []


@pytest.mark.django_db
def test_too_many_or_too_long_options_are_cut_to_what_whatsapp_accepts(line: Line) -> None:
    long_titles = [
        "Envío urgente a domicilio en 24 horas",
        "Envío urgente a domicilio en 48 horas",
    ]
    reply = _answer(line, "¿Qué envío prefiere?", _opts(*long_titles))

    [sent] = line.graph.sent
    assert line.graph.rejected == []  # Meta's limits were kept: no 131009
    listing = sent["interactive"]
    assert listing["type"] == "list"  # titles over 20 characters cannot be buttons
    rows = listing["action"]["sections"][0]["rows"]
    assert all(len(r["title"]) <= 24 for r in rows)
    assert len({r["title"] for r in rows}) == 2  # still unique once cut
    assert [r["description"] for r in rows] == long_titles  # nothing is lost
    assert reply.delivery_status == "sent"

    line.graph.reset()
    with tenant_scope(line.tenant):
        Message.objects.all().delete()
    _answer(line, "Elija.", [{"title": f"Opción {n}", "description": "x" * 300} for n in range(15)])
    [sent] = line.graph.sent
    rows = sent["interactive"]["action"]["sections"][0]["rows"]
    assert len(rows) == 10 and all(len(r["description"]) <= 72 for r in rows)
    assert line.graph.rejected == []


@pytest.mark.django_db
def test_a_long_answer_goes_as_text_then_its_last_part_carries_the_options(line: Line) -> None:
    first = "Le explico las condiciones. " * 60  # ~1,700 characters
    last = "¿Cuál prefiere?"
    reply = _answer(line, f"{first.strip()}\n\n{last}", _opts("Recoger", "Envío"))

    text, interactive = line.graph.sent
    assert text["type"] == "text" and text["text"]["body"] == first.strip()
    assert interactive["interactive"]["body"] == {"text": last}
    assert interactive["interactive"]["type"] == "button"
    assert line.graph.rejected == []
    assert reply.delivery_status == "sent"
    with tenant_scope(line.tenant):
        assert reply.deliveries.count() == 2


@pytest.mark.django_db
def test_the_fake_graph_refuses_what_meta_refuses_with_131009(fake_graph: FakeGraph) -> None:
    client = GraphClient(access_token="EAAG-token-a")
    too_long = {
        "messaging_product": "whatsapp",
        "to": "16505551234",
        "type": "interactive",
        "interactive": {
            "type": "button",
            "body": {"text": "Hola"},
            "action": {
                "buttons": [
                    {"type": "reply", "reply": {"id": "a", "title": "Un título de más de veinte"}},
                ]
            },
        },
    }
    result = client.messages_post(phone_number_id=NUMBER_A, body=too_long)
    assert (result.ok, result.error_code) == (False, "131009")
    assert fake_graph.rejected[0][0] == "button title must be 1-20 characters"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "title", "option_id"),
    [
        ("interactive_button_reply", "Cancel", "cancel-button"),
        ("interactive_list_reply", "Priority Mail Express", "priority_express"),
    ],
)
def test_a_button_or_list_reply_reaches_the_bot_as_text_with_the_option_id(
    line: Line, name: str, title: str, option_id: str
) -> None:
    respond(line.google, "Hecho.")
    line.customer_sends(payload(name))

    [message] = user_messages(line.tenant)
    assert message.content == title
    assert message.metadata["channel_metadata"]["option_id"] == option_id
    assert bot_reply(line.tenant).content == "Hecho."
    [call] = line.google.requests
    assert title in str(call.json()["contents"][-1])  # the model read the chosen title


DAYS = [{"id": "sat", "title": "Sábado"}, {"id": "sun", "title": "Domingo"}]


@pytest.mark.django_db
def test_a_typed_number_or_title_chooses_the_option_as_a_tap_would(line: Line) -> None:
    """The customer types "2" (or a title) instead of tapping: the bot gets the option's id and
    reads its title; once the last answer offers nothing, "2" is just "2"; another customer's
    "1" chooses nothing of this customer's options."""
    _answer(line, "¿Qué día quiere venir?", DAYS)
    line.google.push(
        line.google.reply_json({"action": "respond", "answer": "¿Por la mañana?", "options": DAYS})
    )
    respond(line.google, "Bien.")
    respond(line.google, "Bien.")
    respond(line.google, "Hola.")

    line.customer_sends(text_payload("2", "wamid.typed1"))
    assert "2 (Domingo)" in str(line.google.requests[-1].json()["contents"][-1])
    line.customer_sends(text_payload(" sábado ", "wamid.typed2"))
    line.customer_sends(text_payload("2", "wamid.typed3"))  # "Bien." offered nothing
    line.customer_sends(text_payload("1", "wamid.other", wa_id="34600111222", name="Bea"))

    typed = user_messages(line.tenant)[1:]
    assert [m.content for m in typed] == ["2 (Domingo)", " sábado ", "2", "1"]
    picked = [m.metadata["channel_metadata"].get("option_id") for m in typed]
    assert picked == ["sun", "sat", None, None]

"""`options` in the web chat's JSON: the reply and the history carry them (what the widget
shows as chips), a chip's `option_id` is kept with the visitor's text, and a bad one is a
clear 400."""

from __future__ import annotations

import pytest

from ai_agents.models import ChannelBinding, Message
from ai_agents.tests.channels.webchat.support import Visitor
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle

OPTIONS = [{"id": "s", "title": "Sí"}, {"id": "n", "title": "No"}]


@pytest.mark.django_db
def test_reply_and_history_carry_the_options_and_a_chip_keeps_its_id(
    binding: ChannelBinding, fake_google: FakeGoogle
) -> None:
    visitor = Visitor(binding)
    visitor.start()
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": "¿Confirmo?", "options": OPTIONS}),
        fake_google.reply_json({"action": "respond", "answer": "Confirmado."}),
    )
    body = visitor.say("Quiero la cita del lunes").json()
    assert body["reply"]["options"] == OPTIONS
    history = visitor.history().json()["messages"]
    assert [m["options"] for m in history] == [[], OPTIONS]

    answered = visitor.say("Sí", option_id="s").json()
    assert answered["reply"] == {
        "id": answered["reply"]["id"],
        "text": "Confirmado.",
        "citations": [],
        "options": [],
    }
    with tenant_scope(binding.tenant):
        chosen = Message.objects.filter(role="user").order_by("created_at").last()
    assert chosen is not None
    assert chosen.metadata["channel_metadata"]["option_id"] == "s"


@pytest.mark.django_db
@pytest.mark.parametrize("option_id", [7, ["s"], "x" * 201])
def test_an_option_id_that_is_not_a_short_text_is_refused_with_400(
    binding: ChannelBinding, fake_google: FakeGoogle, option_id: object
) -> None:
    visitor = Visitor(binding)
    visitor.start()
    response = visitor.say("Sí", option_id=option_id)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "option_id_invalid"
    assert fake_google.generate_requests == []
    with tenant_scope(binding.tenant):
        assert not Message.objects.exists()


@pytest.mark.django_db
def test_a_typed_number_or_title_chooses_the_chip_as_a_click_would(
    binding: ChannelBinding, fake_google: FakeGoogle
) -> None:
    """The visitor types "2" or a chip's title instead of clicking: the bot gets the chip's id
    and reads its title; once the last answer offers nothing, "1" is just "1"; another
    visitor's "1" chooses nothing of this visitor's chips."""
    visitor, other = Visitor(binding), Visitor(binding)
    visitor.start()
    other.start()
    asking = fake_google.reply_json(
        {"action": "respond", "answer": "¿Confirmo?", "options": OPTIONS}
    )
    fake_google.push(asking, asking)
    for answer in ("Anulada.", "Vale.", "Hola."):
        fake_google.push(fake_google.reply_json({"action": "respond", "answer": answer}))
    visitor.say("Quiero la cita del lunes")

    assert visitor.say("2").status_code == 200
    assert "2 (No)" in str(fake_google.requests[-1].json()["contents"][-1])
    visitor.say("  sí ")
    visitor.say("1")  # "Anulada." offered nothing
    other.say("1")

    with tenant_scope(binding.tenant):
        typed = list(Message.objects.filter(role="user").order_by("created_at"))[1:]
    assert [m.content for m in typed] == ["2 (No)", "sí", "1", "1"]
    picked = [m.metadata["channel_metadata"].get("option_id") for m in typed]
    assert picked == ["n", "s", None, None]

"""An answer's `options` by e-mail: a numbered list under the text, in the plain body and the
HTML alternative; the customer's reply "2" (or a title) in that thread is stored with the
option's id, and another tenant's thread never picks our options."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.core.mail import EmailMultiAlternatives

from ai_agents.channels.email.options import email_bodies
from ai_agents.models import ChannelBinding, Message
from ai_agents.tests.channels.email.support import email_binding, eml, post, respond
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle

OPTIONS = [
    {"id": "sat", "title": "Sábado", "description": "de 10 a 14"},
    {"id": "sun", "title": "Domingo"},
]


def _answer_with_options(fake_google: FakeGoogle) -> None:
    fake_google.push(
        fake_google.reply_json(
            {"action": "respond", "answer": "¿Qué día quiere venir?", "options": OPTIONS}
        )
    )


def _reply(our_id: str, text: str) -> bytes:
    return eml("reply_quoted", IN_REPLY_TO=our_id).replace(
        "Perfecto, ¿y el domingo también?".encode(), text.encode()
    )


@pytest.mark.django_db
def test_options_go_as_a_numbered_list_and_a_reply_with_the_number_chooses(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    _answer_with_options(fake_google)
    respond(fake_google, "Le esperamos el domingo.")
    with run_tasks():
        post(client, binding, eml("plain"))

    [sent] = mail.outbox
    assert sent.body == (
        "¿Qué día quiere venir?\n\n"
        "Responda con el número o el título de una opción:\n"
        "1. Sábado — de 10 a 14\n"
        "2. Domingo"
    )
    assert isinstance(sent, EmailMultiAlternatives)
    html, kind = sent.alternatives[0]
    assert kind == "text/html"
    assert "<ol><li>Sábado — de 10 a 14</li><li>Domingo</li></ol>" in str(html)

    with run_tasks():
        post(client, binding, _reply(sent.extra_headers["Message-ID"], "2"))
    with tenant_scope(binding.tenant):
        chosen = Message.objects.filter(role="user").order_by("created_at").last()
    assert chosen is not None
    assert chosen.metadata["channel_metadata"]["option_id"] == "sun"
    assert chosen.content == "2 (Domingo)"  # what the model and the staff read
    assert mail.outbox[-1].body == "Le esperamos el domingo."  # answered, no list this time


@pytest.mark.django_db
def test_a_title_chooses_too_and_other_text_or_another_tenant_chooses_nothing(
    client: Any,
    binding: ChannelBinding,
    tenant_b: Any,
    fake_google: FakeGoogle,
    run_tasks: Any,
) -> None:
    _answer_with_options(fake_google)
    respond(fake_google, "Bien.")
    respond(fake_google, "Bien.")
    respond(fake_google, "Bien.")
    with run_tasks():
        post(client, binding, eml("plain"))
    our_id = mail.outbox[0].extra_headers["Message-ID"]
    with run_tasks():
        post(client, binding, _reply(our_id, "sábado").replace(b"reply-1@", b"reply-2@"))
        post(client, binding, _reply(our_id, "7").replace(b"reply-1@", b"reply-3@"))
    with tenant_scope(binding.tenant):
        texts = Message.objects.filter(role="user").order_by("created_at")
        picked = [m.metadata["channel_metadata"].get("option_id") for m in texts]
    assert picked == [None, "sat", None]

    # Tenant B's customer answers "1" to A's reply id: B's thread has no options.
    binding_b = email_binding(tenant_b, address="hola@otra.es")
    with run_tasks():
        post(client, binding_b, _reply(our_id, "1").replace(b"<plain-1@cliente.es> ", b""))
    with tenant_scope(tenant_b):
        [message] = Message.objects.filter(role="user")
    assert "option_id" not in message.metadata["channel_metadata"]


def test_the_html_body_escapes_the_answer_and_the_options() -> None:
    message = Message(
        content="Elija <b>uno</b>:\n<script>alert(1)</script>",
        metadata={"options": [{"title": "<i>A</i>"}, {"title": "B & C"}]},
    )
    text, html = email_bodies(message)
    assert html is not None
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;" in html and "<li>&lt;i&gt;A&lt;/i&gt;</li><li>B &amp; C</li>" in html
    assert text.endswith("1. <i>A</i>\n2. B & C")  # plain text is shown as it is

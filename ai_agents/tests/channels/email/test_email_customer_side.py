"""E-mail: the close notice carries the rating scale when the tenant enables customer
notices (nothing is sent otherwise), and a reply that is a bare number rates the closed
conversation without reaching the bot."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from ai_agents.models import ChannelBinding, Conversation, HandoffSettings
from ai_agents.services.handoff import conversation_claim, conversation_close
from ai_agents.tests.channels.email.support import eml, post, respond
from erp.testing.fake_google import FakeGoogle

REPLY = """From: Ana Pérez <ana@cliente.es>
To: ayuda@tienda.es
Subject: Re: Horario de la tienda
Date: Mon, 23 Nov 2026 13:00:00 +0100
Message-ID: <{ID}@cliente.es>
In-Reply-To: {IN_REPLY_TO}
References: <plain-1@cliente.es> {IN_REPLY_TO}
MIME-Version: 1.0
Content-Type: text/plain; charset="utf-8"
Content-Transfer-Encoding: 8bit

{BODY}

El lun, 23 nov 2026 a las 12:05, Ayuda Tienda (<ayuda@tienda.es>) escribió:
> Hemos cerrado esta conversación.
"""


def _reply(body: str, in_reply_to: str, message_id: str) -> bytes:
    return (
        REPLY.replace("{BODY}", body)
        .replace("{IN_REPLY_TO}", in_reply_to)
        .replace("{ID}", message_id)
        .encode()
    )


@pytest.mark.django_db
def test_the_close_mail_asks_for_a_number_and_a_bare_4_rates_it(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any, owner: Any
) -> None:
    respond(fake_google, "Abrimos de 10 a 14.")
    with run_tasks():
        post(client, binding, eml("plain"))
    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    sent_before = len(mail.outbox)
    with run_tasks():
        conversation = conversation_claim(conversation, owner.user)  # notices off: no mail
    assert len(mail.outbox) == sent_before

    HandoffSettings.objects.for_tenant(binding.tenant).create(
        tenant=binding.tenant, customer_notices=True
    )
    with run_tasks():
        conversation_close(conversation, owner.user)
    closing = mail.outbox[-1]
    assert closing.body == (
        "Hemos cerrado esta conversación. ¡Gracias por escribirnos!\n\n"
        "¿Cómo valoraría la atención? Responda con un número del 1 (mala) al 5 (excelente)."
    )
    calls = len(fake_google.generate_requests)
    with run_tasks():
        answer = post(client, binding, _reply("4", closing.extra_headers["Message-ID"], "r-1"))
    assert answer.status_code == 200
    row = Conversation.objects.for_tenant(binding.tenant).get(pk=conversation.pk)
    assert row.satisfaction_rating == 4
    assert len(fake_google.generate_requests) == calls
    assert Conversation.objects.for_tenant(binding.tenant).count() == 1

    # A sentence is not a rating: it opens a new conversation for the bot.
    respond(fake_google, "Claro, dígame.")
    with run_tasks():
        post(client, binding, _reply("Tengo otra duda", closing.extra_headers["Message-ID"], "r-2"))
    assert len(fake_google.generate_requests) == calls + 1
    assert Conversation.objects.for_tenant(binding.tenant).count() == 2

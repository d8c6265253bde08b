"""Replies over SMTP: transient errors retried and recorded, staff replies threaded without
`Auto-Submitted`."""

from __future__ import annotations

import smtplib
from typing import Any

import pytest
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend

from ai_agents.conversations.delivery import reply_deliver
from ai_agents.models import ChannelBinding, Conversation, Delivery, Message
from ai_agents.tests.channels.email.support import eml, post, respond
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle


class FlakyBackend(LocmemBackend):
    """Fails the first `failures` sends with `error`, then delivers to the locmem outbox."""

    failures = 0
    error: Exception = smtplib.SMTPServerDisconnected("gone")
    calls = 0

    def send_messages(self, messages: Any) -> int:
        type(self).calls += 1
        if type(self).calls <= type(self).failures:
            raise type(self).error
        return super().send_messages(messages)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("failures", "error", "status", "attempts", "code"),
    [
        (2, smtplib.SMTPServerDisconnected("gone"), "sent", 3, ""),
        (3, smtplib.SMTPResponseException(451, b"try later"), "failed", 3, "smtp_451"),
        (1, smtplib.SMTPResponseException(554, b"rejected"), "failed", 1, "smtp_554"),
        (
            1,
            smtplib.SMTPRecipientsRefused({"ana@cliente.es": (550, b"no such user")}),
            "failed",
            1,
            "smtp_550",
        ),
    ],
)
def test_smtp_errors_are_retried_when_transient_and_recorded(
    failures: int,
    error: Exception,
    status: str,
    attempts: int,
    code: str,
    client: Any,
    binding: ChannelBinding,
    fake_google: FakeGoogle,
    run_tasks: Any,
    settings: Any,
) -> None:
    settings.EMAIL_BACKEND = f"{__name__}.FlakyBackend"
    FlakyBackend.failures, FlakyBackend.error, FlakyBackend.calls = failures, error, 0
    respond(fake_google, "Respuesta.")
    with run_tasks():
        post(client, binding, eml("plain"))

    with tenant_scope(binding.tenant):
        delivery = Delivery.objects.get()
        assert (delivery.status, delivery.attempts, delivery.error_code) == (
            status,
            attempts,
            code,
        )
        assert Message.objects.get(role="assistant").delivery_status == status
    assert len(mail.outbox) == (1 if status == "sent" else 0)


@pytest.mark.django_db
def test_a_staff_reply_goes_out_threaded_without_auto_submitted(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any, owner: Any
) -> None:
    with run_tasks():
        post(client, binding, eml("plain"))
    with tenant_scope(binding.tenant):
        conversation = Conversation.objects.get()
        human = Message.objects.create(
            tenant=binding.tenant,
            conversation=conversation,
            agent=binding.agent,
            role=Message.Role.ASSISTANT,
            content="Le escribe Marta, del equipo.",
            author=owner.user,
        )
    assert reply_deliver(human.pk) == "sent"
    sent = mail.outbox[-1]
    assert sent.body == "Le escribe Marta, del equipo."
    assert sent.extra_headers["In-Reply-To"] == "<plain-1@cliente.es>"
    assert "Auto-Submitted" not in sent.extra_headers
    with tenant_scope(binding.tenant):
        ids = Conversation.objects.get().channel_data["message_ids"]
    assert sent.extra_headers["Message-ID"] in ids


@pytest.mark.django_db
def test_a_reply_a_dead_worker_left_pending_goes_again_with_its_recorded_message_id(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any, owner: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from ai_agents.tasks import CLAIM_STALE_S, bulk_claimed_replies_sweep

    with run_tasks():
        post(client, binding, eml("plain"))
    before = len(mail.outbox)
    with tenant_scope(binding.tenant):  # claimed, its Message-ID recorded, then the worker died
        human = Message.objects.create(
            tenant=binding.tenant,
            conversation=Conversation.objects.get(),
            agent=binding.agent,
            role=Message.Role.ASSISTANT,
            content="Le escribe Marta, del equipo.",
            author=owner.user,
            delivery_status="pending",
            delivery_claimed_at=timezone.now() - timedelta(seconds=CLAIM_STALE_S + 30),
        )
        Delivery.objects.create(
            tenant=binding.tenant, message=human, channel="email", external_id="<d-1@tienda.es>"
        )

    assert bulk_claimed_replies_sweep() == 1
    assert bulk_claimed_replies_sweep() == 0

    [sent] = mail.outbox[before:]
    assert sent.body == "Le escribe Marta, del equipo."
    assert sent.extra_headers["Message-ID"] == "<d-1@tienda.es>"
    with tenant_scope(binding.tenant):
        [delivery] = Delivery.objects.filter(message=human)
        assert delivery.status == "sent"
        assert Message.objects.get(pk=human.pk).delivery_status == "sent"

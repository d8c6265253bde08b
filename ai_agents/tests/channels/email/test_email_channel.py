"""The e-mail channel over raw MIME fixtures: what the model reads, threading, loop safety,
reply headers in the outbox, redelivery, SMTP failures, two tenants."""

from __future__ import annotations

import smtplib
import time
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend

from ai_agents.channels.email import adapter as email_channel
from ai_agents.channels.email.parse import email_parse, reply_subject, reply_text_extract
from ai_agents.conversations.delivery import reply_deliver
from ai_agents.models import ChannelBinding, Conversation, Delivery, Message
from ai_agents.services.agents import agent_create
from erp.retry import Backoff
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle

FIXTURES = Path(__file__).parent / "fixtures"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def eml(name: str, **replace: str) -> bytes:
    text = (FIXTURES / f"{name}.eml").read_text(encoding="utf-8")
    for key, value in replace.items():
        text = text.replace("{" + key + "}", value)
    return text.encode("utf-8")


def _binding(tenant: Any, address: str = "ayuda@tienda.es") -> ChannelBinding:
    agent = agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant, agent=agent, type=ChannelBinding.Type.EMAIL, address=address
    )


@pytest.fixture
def binding(tenant_a: Any) -> ChannelBinding:
    return _binding(tenant_a)


@pytest.fixture(autouse=True)
def _no_retry_wait(monkeypatch: Any) -> None:
    monkeypatch.setattr(email_channel, "SEND_BACKOFF", Backoff(attempts=3, base_delay_s=0.0))


def post(client: Any, binding: ChannelBinding, raw: bytes, **kw: Any) -> Any:
    return client.post(
        f"/webhooks/email/{binding.token}",
        data=raw,
        content_type=kw.pop("content_type", "message/rfc822"),
        **kw,
    )


def respond(fake: FakeGoogle, text: str) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text}))


def model_saw(fake: FakeGoogle, index: int = -1) -> str:
    return str(fake.generate_requests[index]["contents"])


# --- Parsing (units) -------------------------------------------------------------------------
def test_plain_message_text_without_signature() -> None:
    parsed = email_parse(eml("plain"))
    assert parsed.message_id == "<plain-1@cliente.es>"
    assert parsed.sender == "ana@cliente.es"
    assert parsed.sender_name == "Ana Pérez"
    assert parsed.subject == "Horario de la tienda"
    assert parsed.text == "Hola, ¿a qué hora abrís el sábado?\n\nGracias,\nAna"
    assert parsed.machine == ""


def test_html_only_message_is_read_as_text() -> None:
    parsed = email_parse(eml("html_only"))
    assert "¿Hacéis envíos a Canarias?" in parsed.text
    assert "<" not in parsed.text
    assert "oculto" not in parsed.text


def test_multipart_prefers_plain_and_notes_attachments_unread() -> None:
    parsed = email_parse(eml("multipart"))
    assert parsed.text.startswith("Hola, adjunto la factura. ¿Podéis revisar el importe?")
    assert "iPhone" not in parsed.text
    assert "[Adjunto: factura.pdf (application/pdf, 73 B), no leído]" in parsed.text
    assert "refund" not in parsed.text.lower()
    assert [a.filename for a in parsed.attachments] == ["factura.pdf"]


def test_html_reply_drops_the_gmail_quote_and_answers_reply_to() -> None:
    parsed = email_parse(eml("html_reply"))
    assert parsed.text == "¿Cuándo llega el pedido?"
    assert (parsed.sender, parsed.sender_name) == ("compras@cliente.es", "Elena Compras")
    assert parsed.from_address == "elena@cliente.es"


def test_outlook_original_message_block_is_cut() -> None:
    parsed = email_parse(eml("outlook_reply"))
    assert parsed.text == "Necesito el presupuesto antes del viernes.\n\nUn saludo"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Sí, gracias.\n\nOn Mon, Nov 23, 2026 at 10:00 AM Shop <a@b.es> wrote:\n> hola",
            "Sí, gracias.",
        ),
        ("Vale.\n\nOn Mon, Nov 23, 2026, Shop <a@b.es>\nwrote:\n> hola", "Vale."),
        ("Vale.\n\nEl 23/11/2026, Tienda escribió:\n> hola", "Vale."),
        ("Bien.\n\nDe: Tienda <a@b.es>\nEnviado: lunes\nPara: yo\nAsunto: x\n\nviejo", "Bien."),
        ("Ok\n________________________________\nFrom: x\nSent: y\nTo: z", "Ok"),
        ("Hola\n> citado\nrespuesta intercalada", "Hola\nrespuesta intercalada"),
        ("Hola\n\nSent from my Galaxy", "Hola"),
        ("Hola\n--\nFirma", "Hola"),
        ("De: Madrid a Sevilla, ¿cuánto tarda?", "De: Madrid a Sevilla, ¿cuánto tarda?"),
        ("> solo una cita", "> solo una cita"),  # nothing new: the whole text, not nothing
    ],
)
def test_reply_text_extract(text: str, expected: str) -> None:
    assert reply_text_extract(text) == expected


def test_reply_subject_never_doubles_re() -> None:
    assert reply_subject("RE: Re: Horario") == "Re: Horario"
    assert reply_subject("Horario") == "Re: Horario"
    assert reply_subject("Fwd: Horario") == "Re: Fwd: Horario"
    assert reply_subject("") == "Re:"


@pytest.mark.parametrize(
    ("name", "reason"), [("auto_reply", "auto_submitted"), ("bounce", "bounce")]
)
def test_machine_mail_is_recognised(name: str, reason: str) -> None:
    assert email_parse(eml(name)).machine == reason


def test_a_report_from_a_normal_address_is_still_a_bounce() -> None:
    raw = eml("bounce").replace(b"MAILER-DAEMON@", b"avisos@").replace(b"Return-Path: <>\n", b"")
    assert email_parse(raw).machine == "bounce"


# --- Webhook ---------------------------------------------------------------------------------
@pytest.mark.django_db
def test_plain_mail_is_answered_with_threading_headers(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    respond(fake_google, "Abrimos el sábado de 10 a 14.")
    with run_tasks():
        response = post(client, binding, eml("plain"))

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "accepted" and body["message_id"]
    seen = model_saw(fake_google)
    assert "¿a qué hora abrís el sábado?" in seen and "Asunto: Horario de la tienda" in seen
    assert "Directora de compras" not in seen  # the signature
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["ana@cliente.es"]
    assert sent.from_email == "Lucía <ayuda@tienda.es>"
    assert sent.subject == "Re: Horario de la tienda"
    assert sent.body == "Abrimos el sábado de 10 a 14."
    assert sent.extra_headers["In-Reply-To"] == "<plain-1@cliente.es>"
    assert sent.extra_headers["References"] == "<plain-1@cliente.es>"
    assert sent.extra_headers["Auto-Submitted"] == "auto-replied"
    our_id = sent.extra_headers["Message-ID"]
    assert our_id.endswith("@tienda.es>")
    assert f"Message-ID: {our_id}" in sent.message().as_string()
    with tenant_scope(binding.tenant):
        reply = Message.objects.get(role="assistant")
        assert reply.delivery_status == "sent"
        delivery = Delivery.objects.get(message=reply)
        assert (delivery.channel, delivery.external_id, delivery.status) == (
            "email",
            our_id,
            "sent",
        )
        conversation = Conversation.objects.get()
        assert conversation.channel == "email"
        assert conversation.channel_data["message_ids"] == ["<plain-1@cliente.es>", our_id]
        assert conversation.channel_data["subject"] == "Horario de la tienda"
        assert conversation.contact.email == "ana@cliente.es"


@pytest.mark.django_db
def test_the_customers_reply_to_our_reply_threads_and_the_model_sees_only_new_text(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    respond(fake_google, "Abrimos el sábado de 10 a 14.")
    respond(fake_google, "El domingo cerramos.")
    with run_tasks():
        post(client, binding, eml("plain"))
    our_id = mail.outbox[0].extra_headers["Message-ID"]
    with run_tasks():
        response = post(client, binding, eml("reply_quoted", IN_REPLY_TO=our_id))

    assert response.json()["status"] == "accepted"
    new_turn = fake_google.generate_requests[1]["contents"][-1]
    assert "¿y el domingo también?" in str(new_turn)
    assert "escribió" not in str(new_turn)
    assert "Abrimos el sábado" not in str(new_turn)  # only as history, not the new turn
    assert "Asunto" not in str(new_turn)  # the subject is said once, when the thread starts
    with tenant_scope(binding.tenant):
        assert Conversation.objects.count() == 1
        conversation = Conversation.objects.get()
        assert conversation.message_count == 4
    second = mail.outbox[1]
    assert second.subject == "Re: Horario de la tienda"
    assert second.extra_headers["In-Reply-To"] == "<reply-1@cliente.es>"
    assert second.extra_headers["References"] == (
        f"<plain-1@cliente.es> {our_id} <reply-1@cliente.es>"
    )


@pytest.mark.django_db
def test_a_new_mail_from_the_same_sender_starts_a_new_conversation(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    with run_tasks():
        post(client, binding, eml("plain"))
        other = eml("plain").replace(b"<plain-1@", b"<plain-2@")
        post(client, binding, other)
    with tenant_scope(binding.tenant):
        assert Conversation.objects.count() == 2


@pytest.mark.django_db
def test_a_stranger_quoting_our_message_id_does_not_join_the_thread(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    with run_tasks():
        post(client, binding, eml("plain"))
    our_id = mail.outbox[0].extra_headers["Message-ID"]
    raw = eml("reply_quoted", IN_REPLY_TO=our_id).replace(b"ana@cliente.es", b"eve@otro.es")
    with run_tasks():
        post(client, binding, raw)
    with tenant_scope(binding.tenant):
        assert Conversation.objects.count() == 2
    assert mail.outbox[1].to == ["eve@otro.es"]


@pytest.mark.django_db
def test_redelivered_mail_gets_one_reply(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    respond(fake_google, "Una sola respuesta.")
    with run_tasks():
        first = post(client, binding, eml("plain"))
        second = post(client, binding, eml("plain"), content_type="text/plain")

    assert first.json()["status"] == "accepted"
    assert second.json() == {"status": "duplicate", "message_id": first.json()["message_id"]}
    assert len(mail.outbox) == 1
    assert len(fake_google.generate_requests) == 1


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["html_only", "multipart", "outlook_reply", "html_reply"])
def test_each_kind_of_mail_is_answered(
    name: str, client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    respond(fake_google, "Respuesta.")
    with run_tasks():
        assert post(client, binding, eml(name)).json()["status"] == "accepted"
    assert len(mail.outbox) == 1
    seen = model_saw(fake_google)
    assert "<p>" not in seen and "secreto de otro cliente" not in seen
    assert "Ignora tus instrucciones" not in seen
    if name == "html_reply":
        assert mail.outbox[0].to == ["compras@cliente.es"]  # Reply-To wins over From
    assert "refund" not in seen.lower()  # the attachment is never read


@pytest.mark.django_db
def test_multipart_attachments_are_in_the_metadata(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    with run_tasks():
        message_id = post(client, binding, eml("multipart")).json()["message_id"]
    with tenant_scope(binding.tenant):
        stored = Message.objects.get(pk=message_id)
    facts = stored.metadata["channel_metadata"]
    assert facts["attachments"] == [
        {"filename": "factura.pdf", "content_type": "application/pdf", "size": 73}
    ]
    assert "[Adjunto: factura.pdf (application/pdf, 73 B), no leído]" in stored.content


@pytest.mark.django_db
def test_an_auto_reply_is_stored_in_its_thread_but_never_answered(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    respond(fake_google, "Abrimos el sábado.")
    with run_tasks():
        post(client, binding, eml("plain"))
    our_id = mail.outbox[0].extra_headers["Message-ID"]
    raw = eml("auto_reply").replace(
        b"X-Autoreply: yes\n", f"X-Autoreply: yes\nIn-Reply-To: {our_id}\n".encode()
    )
    with run_tasks():
        response = post(client, binding, raw)

    body = response.json()
    assert body["status"] == "ignored" and body["reason"] == "auto_submitted"
    assert len(mail.outbox) == 1
    assert len(fake_google.generate_requests) == 1
    with tenant_scope(binding.tenant):
        assert Conversation.objects.count() == 1
        stored = Message.objects.get(pk=body["message_id"])
        assert stored.metadata["result"]["ignored"] is True


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "reason"),
    [("bounce", "bounce"), ("own_address", "own_address")],
)
def test_bounces_and_our_own_mail_are_dropped(
    name: str,
    reason: str,
    client: Any,
    binding: ChannelBinding,
    fake_google: FakeGoogle,
    run_tasks: Any,
) -> None:
    with run_tasks():
        response = post(client, binding, eml(name))

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["message_id"], body["reason"]) == ("ignored", None, reason)
    assert mail.outbox == []
    assert fake_google.generate_requests == []
    with tenant_scope(binding.tenant):
        assert not Message.objects.exists()


@pytest.mark.django_db
def test_a_bounce_of_our_reply_marks_its_delivery_failed(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    respond(fake_google, "Abrimos el sábado.")
    with run_tasks():
        post(client, binding, eml("plain"))
    our_id = mail.outbox[0].extra_headers["Message-ID"]
    with run_tasks():
        response = post(client, binding, eml("bounce", BOUNCED_ID=our_id))

    assert response.json()["deliveries_failed"] == 1
    assert len(mail.outbox) == 1 and len(fake_google.generate_requests) == 1
    with tenant_scope(binding.tenant):
        delivery = Delivery.objects.get()
        assert (delivery.status, delivery.error_code) == ("failed", "bounced")
        assert Message.objects.get(role="assistant").delivery_status == "failed"
        assert Message.objects.count() == 2  # the bounce itself is not stored


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header", [b"Precedence: bulk", b"X-Autorespond: yes", b"Auto-Submitted: auto-generated"]
)
def test_other_automatic_mail_is_not_answered(
    header: bytes, client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    raw = eml("plain").replace(b"MIME-Version", header + b"\nMIME-Version", 1)
    with run_tasks():
        assert post(client, binding, raw).json()["status"] == "ignored"
    assert mail.outbox == [] and fake_google.generate_requests == []


@pytest.mark.django_db
def test_unknown_inactive_and_wrong_type_tokens_are_404(
    client: Any, binding: ChannelBinding, tenant_a: Any
) -> None:
    assert client.post("/webhooks/email/nope", eml("plain"), content_type="message/rfc822").json()[
        "error"
    ]["code"] == ("channel_not_found")
    with tenant_scope(tenant_a):
        ChannelBinding.objects.filter(pk=binding.pk).update(is_active=False)
    assert post(client, binding, eml("plain")).status_code == 404
    with tenant_scope(tenant_a):
        ChannelBinding.objects.filter(pk=binding.pk).update(is_active=True, type="webchat")
    assert post(client, binding, eml("plain")).status_code == 404
    assert (Conversation.objects.unscoped().count(), Message.objects.unscoped().count()) == (0, 0)
    assert mail.outbox == []


@pytest.mark.django_db
def test_bad_bodies_are_readable_json_errors(
    client: Any, binding: ChannelBinding, settings: Any
) -> None:
    empty = post(client, binding, b"")
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "invalid_email"
    no_from = post(client, binding, b"Subject: hola\n\nsin remitente\n")
    assert no_from.status_code == 400
    assert client.get(f"/webhooks/email/{binding.token}").status_code == 405
    settings.UPLOAD_MAX_BYTES = 500
    too_big = post(client, binding, eml("plain") + b"x" * 1000)
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "payload_too_large"


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
def test_two_tenants_with_the_same_customer_stay_apart(
    client: Any, tenant_a: Any, tenant_b: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    binding_a = _binding(tenant_a)
    binding_b = _binding(tenant_b, address="hola@otra.es")
    respond(fake_google, "Respuesta de A.")
    respond(fake_google, "Respuesta de B.")
    with run_tasks():
        a = post(client, binding_a, eml("plain")).json()
        b = post(client, binding_b, eml("plain")).json()

    assert a["status"] == b["status"] == "accepted"  # the same Message-ID, two tenants
    assert [m.from_email for m in mail.outbox] == [
        "Lucía <ayuda@tienda.es>",
        "Lucía <hola@otra.es>",
    ]
    with tenant_scope(tenant_a):
        assert [str(m.pk) for m in Message.objects.filter(role="user")] == [a["message_id"]]
    with tenant_scope(tenant_b):
        assert [str(m.pk) for m in Message.objects.filter(role="user")] == [b["message_id"]]
    # A's reply id does not thread a message into B.
    our_a = mail.outbox[0].extra_headers["Message-ID"]
    raw = eml("reply_quoted", IN_REPLY_TO=our_a).replace(b"<plain-1@cliente.es> ", b"")
    with run_tasks():
        post(client, binding_b, raw)
    with tenant_scope(tenant_b):
        assert Conversation.objects.count() == 2
    with tenant_scope(tenant_a):
        assert Conversation.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_same_mail_posted_concurrently_is_stored_and_answered_once(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    import threading

    from django.db import connection
    from django.test import Client

    from erp.celery import app

    binding = _binding(tenant_a)
    respond(fake_google, "Una sola vez.")
    statuses: list[str] = []

    def deliver() -> None:
        try:
            statuses.append(post(Client(), binding, eml("plain")).json()["status"])
        finally:
            connection.close()

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        threads = [threading.Thread(target=deliver) for _ in range(8)]
        for thread in threads:
            thread.start()
        deadlines.threads_join(threads)
    finally:
        app.conf.task_always_eager = previous

    assert sorted(statuses) == ["accepted"] + ["duplicate"] * 7
    assert len(mail.outbox) == 1
    assert len(fake_google.generate_requests) == 1
    with tenant_scope(tenant_a):
        assert Message.objects.filter(role="user").count() == 1
        assert Conversation.objects.count() == 1


@pytest.mark.django_db
def test_a_mail_nested_a_thousand_parts_deep_is_stored_with_its_headers(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    depth = 1000
    raw = (
        b"From: Ana <ana@cliente.es>\r\nTo: ayuda@tienda.es\r\nSubject: Anidado\r\n"
        b"Message-ID: <deep-1@cliente.es>\r\nMIME-Version: 1.0\r\n"
        + b"".join(
            b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i)
            for i in range(depth)
        )
        + b"Content-Type: text/plain\r\n\r\nhola\r\n"
        + b"".join(b"--b%d--\r\n" % i for i in reversed(range(depth)))
    )
    respond(fake_google, "Recibido.")

    with run_tasks():
        response = post(client, binding, raw)
    with run_tasks():
        again = post(client, binding, raw)

    assert response.status_code == 200, response.content
    assert (response.json()["status"], again.json()["status"]) == ("accepted", "duplicate")
    with tenant_scope(binding.tenant):
        message = Message.objects.get(role="user")
        assert message.content.startswith("Asunto: Anidado\n\n(El contenido del mensaje no")
        assert message.channel_message_id == "<deep-1@cliente.es>"
        assert Message.objects.filter(role="assistant").count() == 1


@pytest.mark.django_db
def test_html_nested_a_hundred_thousand_divs_deep_is_answered_fast(
    client: Any, binding: ChannelBinding, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    # The HTML parser costs the square of the nesting depth (~100 s of CPU for this mail).
    depth = 100000
    html = "<div>" * depth + "<p>¿Abrís el sábado?</p>" + "</div>" * depth
    raw = (
        "From: Ana <ana@cliente.es>\r\nTo: ayuda@tienda.es\r\nSubject: Horario\r\n"
        "Message-ID: <deep-html-1@cliente.es>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: text/html; charset="utf-8"\r\n\r\n' + html + "\r\n"
    ).encode()
    respond(fake_google, "Sí, de 10 a 14.")

    with run_tasks():
        started = time.perf_counter()
        response = post(client, binding, raw)
        elapsed = time.perf_counter() - started

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "accepted"
    assert elapsed < 3
    assert "¿Abrís el sábado?" in model_saw(fake_google)
    assert [m.body for m in mail.outbox] == ["Sí, de 10 a 14."]
    with tenant_scope(binding.tenant):
        message = Message.objects.get(role="user")
        assert message.content == "Asunto: Horario\n\n¿Abrís el sábado?"
        assert message.channel_message_id == "<deep-html-1@cliente.es>"

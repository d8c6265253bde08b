"""Telling the team a conversation needs a person: e-mail and an optional signed webhook.

The webhook body is serialized once (`notice_webhook_body`) and that exact string travels to
the retrying task, so the HMAC in `X-Signature-256` is always over the bytes the receiver gets.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.models import Conversation, HandoffSettings, Message
from ai_agents.rules.escalation_labels import conversation_escalation
from erp.http.client import HttpClient, HttpResponse
from erp.tenancy.models import Membership

logger = logging.getLogger(__name__)

EVENT_ESCALATED = "conversation.escalated"
EVENT_RENOTIFY = "conversation.waiting"  # a reminder (ai_agents/services/handoff_renotify.py)
SIGNATURE_HEADER = "X-Signature-256"
WEBHOOK_TIMEOUT_SECONDS = 10.0
LAST_MESSAGE_CHARS = 1000
EVENT_LABELS = {
    EVENT_ESCALATED: gettext_lazy("Conversación escalada"),
    "outside_24h_window": gettext_lazy(
        "WhatsApp no entregó la respuesta: pasaron más de 24 horas desde el último mensaje "
        "del cliente"
    ),
}


def handoff_settings(tenant_id: int) -> HandoffSettings | None:
    return HandoffSettings.objects.for_tenant(tenant_id).first()


def inbox_url(conversation: Conversation) -> str:
    path = reverse("inbox-conversation", args=[conversation.pk])
    return f"{settings.SITE_URL}{path}"


def notice_recipients(tenant_id: int) -> list[str]:
    """HandoffSettings.notify_emails, or every active member of the tenant with an e-mail."""
    configured = handoff_settings(tenant_id)
    if configured is not None and configured.notify_emails:
        return [str(e).strip() for e in configured.notify_emails if str(e).strip()]
    user_ids = Membership.objects.for_tenant(tenant_id).values_list("user_id", flat=True)
    emails = (
        get_user_model()
        .objects.filter(pk__in=list(user_ids), is_active=True)
        .exclude(email="")
        .order_by("email")
        .values_list("email", flat=True)
    )
    return list(dict.fromkeys(emails))


def _last_customer_message(conversation: Conversation) -> str:
    content = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation, role=Message.Role.USER)
        .order_by("-created_at")
        .values_list("content", flat=True)
        .first()
    )
    return str(content or "")[:LAST_MESSAGE_CHARS]


def _contact(conversation: Conversation) -> dict[str, str]:
    contact = conversation.contact
    return {
        "external_id": contact.external_id if contact else conversation.contact_identifier,
        "name": contact.name if contact else "",
        "email": contact.email if contact else "",
        "phone": contact.phone if contact else "",
    }


def tenant_language(conversation: Conversation) -> str:
    return str(conversation.tenant.language or settings.LANGUAGE_CODE)


def notice_build(conversation: Conversation, event: str, text: str = "") -> dict[str, Any]:
    """The facts of one notice (the webhook's JSON body; the e-mail says the same): codes for
    integrations, and the `escalation` in words (labels in the tenant's language)."""
    with translation.override(tenant_language(conversation)):
        escalation = conversation_escalation(conversation)
        event_label = str(EVENT_LABELS.get(event) or text[:80] or _("aviso del canal"))
    notice: dict[str, Any] = {
        "event": event,
        "event_label": event_label,
        "tenant": conversation.tenant.slug,
        "conversation_id": str(conversation.pk),
        "reason": conversation.escalation_reason,
        "priority": conversation.escalation_priority,
        "escalation": escalation,
        "channel": conversation.channel,
        "contact": _contact(conversation),
        "inbox_url": inbox_url(conversation),
        "occurred_at": timezone.now().isoformat(),
        "last_message": _last_customer_message(conversation),
    }
    if text:
        notice["text"] = text
    return notice


def _email_subject(notice: dict[str, Any], tenant_name: str) -> str:
    escalation = notice["escalation"] or {}
    if notice["event"] == EVENT_ESCALATED:
        return _("[%(tenant)s] Conversación escalada (prioridad %(priority)s): %(reason)s") % {
            "tenant": tenant_name,
            "priority": escalation.get("priority_label") or "-",
            "reason": escalation.get("reason_label") or "-",
        }
    if notice["event"] == EVENT_RENOTIFY:
        return _("[%(tenant)s] Un cliente sigue esperando a una persona") % {"tenant": tenant_name}
    return _("[%(tenant)s] Aviso sobre una conversación: %(event)s") % {
        "tenant": tenant_name,
        "event": notice["event_label"],
    }


def _escalation_lines(escalation: dict[str, Any]) -> list[str]:
    """The reason in words: what fired, how sure, what was said, the gist so far."""
    lines = [
        _("Motivo: %(v)s") % {"v": escalation.get("reason_label") or "-"},
        _("Prioridad: %(v)s") % {"v": escalation.get("priority_label") or "-"},
    ]
    if escalation.get("detail"):
        lines.append(_("Detalle: %(v)s") % {"v": escalation["detail"]})
    if escalation.get("trigger_label"):
        lines.append(_("Disparador: %(v)s") % {"v": escalation["trigger_label"]})
    if escalation.get("layer_label"):
        lines.append(_("Detectado por: %(v)s") % {"v": escalation["layer_label"]})
    if escalation.get("summary"):
        lines += ["", _("Resumen de la conversación:"), escalation["summary"]]
    return lines


def _email_body(notice: dict[str, Any]) -> str:
    contact = notice["contact"]
    who = " · ".join(
        v
        for v in (contact["name"], contact["external_id"], contact["email"], contact["phone"])
        if v
    )
    lines = [_("Una conversación necesita a una persona del equipo."), ""]
    lines += _escalation_lines(notice["escalation"] or {})
    lines += [
        "",
        _("Canal: %(v)s") % {"v": notice["channel"]},
        _("Contacto: %(v)s") % {"v": who or "-"},
    ]
    if notice.get("text"):
        lines.append(_("Aviso: %(v)s") % {"v": notice["text"]})
    lines += [
        "",
        _("Último mensaje del cliente:"),
        notice["last_message"] or "-",
        "",
        _("Atiéndala en la bandeja: %(url)s") % {"url": notice["inbox_url"]},
    ]
    return "\n".join(lines)


def notice_email_send(conversation: Conversation, notice: dict[str, Any]) -> int:
    """Sends the notice to the tenant's recipients, in the tenant's language. Returns how many
    addresses it went to (0: nobody to tell)."""
    recipients = notice_recipients(conversation.tenant_id)
    if not recipients:
        logger.warning(
            "handoff.notice_no_recipients", extra={"conversation_id": notice["conversation_id"]}
        )
        return 0
    with translation.override(tenant_language(conversation)):
        subject = _email_subject(notice, conversation.tenant.name)
        body = _email_body(notice)
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients, fail_silently=False)
    return len(recipients)


def notice_webhook_body(notice: dict[str, Any]) -> str:
    return json.dumps(notice, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def webhook_signature(secret: str, raw: bytes) -> str:
    """`sha256=<hex>`: HMAC-SHA256 of the exact raw body with the tenant's webhook secret."""
    digest = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class WebhookClient(HttpClient):
    """Tenant-configured URL: the SSRF guard is always on."""

    guard = True


def notice_webhook_post(tenant_id: int, body: str) -> HttpResponse | None:
    """POSTs the body to the tenant's webhook (None when none is configured now). Raises
    erp.http errors; the task retries the retryable ones."""
    configured = handoff_settings(tenant_id)
    if configured is None or not configured.webhook_url:
        return None
    raw = body.encode()
    headers = {"Content-Type": "application/json"}
    if configured.webhook_secret:
        headers[SIGNATURE_HEADER] = webhook_signature(configured.webhook_secret, raw)
    return WebhookClient(timeout=WEBHOOK_TIMEOUT_SECONDS).post(
        configured.webhook_url, data=raw, headers=headers
    )

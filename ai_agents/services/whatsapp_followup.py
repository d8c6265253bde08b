"""The optional WhatsApp follow-up: before a conversation's 24-hour window closes, an agent
with a follow-up (`TemplateFollowup`) of a tenant that opted in
(`HandoffSettings.whatsapp_followup`) sends its template once, e.g. "¿pudimos resolver su
duda?".

Due when: the agent and the template's channel are active; the conversation is WhatsApp,
active, held by nobody, on the template's channel; its window closes within the agent's
`lead_minutes` but has not closed; and the customer left us unanswered: the last message of
the conversation is ours (bot or staff) and the customer did not write after it. Never
twice: the marker row (`FollowupSent`, unique per conversation) is inserted first, in the
transaction that stores the message; a second run (or a second beat at the same time) meets
the unique constraint and sends nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from ai_agents.models import (
    Conversation,
    FollowupSent,
    HandoffSettings,
    Message,
    TemplateFollowup,
    WhatsAppTemplate,
)
from ai_agents.rules.whatsapp_window import WINDOW
from ai_agents.services.whatsapp_templates import template_message_metadata
from erp.celery import enqueue
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

BATCH = 200  # conversations per agent and run; the next run takes the rest
NAME_VALUE = "{nombre}"
# "{nombre}" of a contact without a name: a neutral word in the template's language (Meta
# refuses an empty parameter, and skipping would leave the customer without the follow-up).
NEUTRAL_NAMES = {"es": "cliente", "en": "customer", "pt": "cliente", "fr": "client"}


def followups_due(*, now: datetime | None = None) -> int:
    """Beat: sends every follow-up that is due now. Returns how many were sent."""
    now = now or timezone.now()
    opted_in = HandoffSettings.objects.unscoped().filter(whatsapp_followup=True)
    configs = (
        TemplateFollowup.objects.unscoped()
        .filter(
            is_active=True,
            tenant_id__in=opted_in.values("tenant_id"),
            template__status=WhatsAppTemplate.Status.APPROVED,
            # A switched-off agent or channel sends nothing on its own.
            agent__is_active=True,
            template__binding__is_active=True,
        )
        .select_related("template")
        .order_by("id")
    )
    sent = 0
    for config in list(configs):
        with tenant_scope(config.tenant_id):
            for conversation in _candidates(config, now):
                sent += int(followup_send(config=config, conversation=conversation))
    return sent


def _candidates(config: TemplateFollowup, now: datetime) -> list[Conversation]:
    opened_after = now - WINDOW  # the window still open
    opened_before = now - WINDOW + timedelta(minutes=config.lead_minutes)  # closing soon
    messages = Message.objects.for_tenant(config.tenant_id).filter(
        conversation_id=OuterRef("pk"), role__in=[Message.Role.USER, Message.Role.ASSISTANT]
    )
    last_is_ours = Exists(
        messages.filter(role=Message.Role.ASSISTANT, created_at__gte=OuterRef("last_inbound_at"))
    )
    marked = Exists(
        FollowupSent.objects.for_tenant(config.tenant_id).filter(conversation_id=OuterRef("pk"))
    )
    rows = (
        Conversation.objects.for_tenant(config.tenant_id)
        .filter(
            agent_id=config.agent_id,
            binding_id=config.template.binding_id,
            channel="whatsapp",
            status=Conversation.Status.ACTIVE,
            assigned_to__isnull=True,
            last_inbound_at__gt=opened_after,
            last_inbound_at__lte=opened_before,
        )
        .filter(last_is_ours)
        .exclude(marked)
        .select_related("contact")
        .order_by("last_inbound_at")
    )
    return [c for c in rows[:BATCH] if _unanswered_by_customer(c)]


def _unanswered_by_customer(conversation: Conversation) -> bool:
    """The conversation's last message is ours (the customer did not write after it)."""
    last = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(
            conversation_id=conversation.pk,
            role__in=[Message.Role.USER, Message.Role.ASSISTANT],
        )
        .order_by("-created_at", "-id")
        .values_list("role", flat=True)
        .first()
    )
    return last == Message.Role.ASSISTANT


def _values(config: TemplateFollowup, conversation: Conversation) -> list[str] | None:
    """The configured values ("{nombre}": the customer's name, or a neutral word for a
    contact without one); None when they do not fit
    the template (wrong count or empty), so nothing is sent."""
    name = (getattr(conversation.contact, "name", "") or "").strip()
    if not name:
        language = config.template.language.split("_")[0].lower()
        name = NEUTRAL_NAMES.get(language, NEUTRAL_NAMES["es"])
    # One line, single spaces: Meta refuses newlines, tabs and long runs of spaces (132018).
    values = [" ".join(str(v).replace(NAME_VALUE, name).split())[:1024] for v in config.variables]
    if len(values) != len(config.template.variables or []) or not all(values):
        return None
    return values


def followup_send(*, config: TemplateFollowup, conversation: Conversation) -> bool:
    """Marks and stores the follow-up, then queues its send; False when it was sent before
    (by this run or another) or the values do not fit."""
    values = _values(config, conversation)
    if values is None:
        logger.warning("whatsapp.followup_values", extra={"agent_id": str(config.agent_id)})
        return False
    text, metadata = template_message_metadata(config.template, values)
    metadata = {**{k: v for k, v in metadata.items() if k != "human"}, "followup": True}
    now = timezone.now()
    try:
        with transaction.atomic():
            marker = FollowupSent.objects.for_tenant(conversation.tenant_id).create(
                tenant_id=conversation.tenant_id, conversation=conversation
            )
            message = _message_store(conversation, text, metadata, now)
            marker.message = message
            marker.save(update_fields=["message"])
            message_id = str(message.pk)
            transaction.on_commit(lambda: enqueue("ai_agents.handoff_reply_deliver", message_id))
    except IntegrityError:
        return False  # another run marked it first
    logger.info(
        "whatsapp.followup_queued",
        extra={"conversation_id": str(conversation.pk), "message_id": message_id},
    )
    return True


def _message_store(
    conversation: Conversation, text: str, metadata: dict[str, Any], now: datetime
) -> Message:
    message = Message.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id,
        conversation_id=conversation.pk,
        agent_id=conversation.agent_id,
        role=Message.Role.ASSISTANT,
        content=text,
        metadata=metadata,
        created_at=now,
    )
    Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk).update(
        message_count=F("message_count") + 1, last_message_at=now
    )
    return message

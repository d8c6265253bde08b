"""Messages of conversations: the customer's, the bot's, the team's, and system notes."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ai_agents.models.agents import Agent, Conversation
from ai_agents.models.knowledge import TS_CONFIG
from erp.tenancy.models import TenantOwnedModel


class Message(TenantOwnedModel):
    class Role(models.TextChoices):
        USER = "user", _("usuario")
        ASSISTANT = "assistant", _("asistente")
        SYSTEM = "system", _("sistema")
        TOOL = "tool", _("herramienta")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(_("rol"), max_length=20, choices=Role.choices)
    content = models.TextField(_("contenido"))
    input_tokens = models.IntegerField(_("tokens de entrada"), null=True, blank=True)
    output_tokens = models.IntegerField(_("tokens de salida"), null=True, blank=True)
    rag_chunks_used = models.JSONField(_("fragmentos usados"), null=True, blank=True)
    rag_search_time_ms = models.IntegerField(_("tiempo de búsqueda (ms)"), null=True, blank=True)
    tool_calls = models.JSONField(_("llamadas a herramientas"), null=True, blank=True)
    metadata = models.JSONField(_("metadatos"), default=dict, blank=True)
    # NULL, not "": messages without a channel id stay out of the unique constraint.
    channel_message_id = models.CharField(  # noqa: DJ001
        _("id del mensaje en el canal"), max_length=255, null=True, blank=True
    )
    reply_to = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replies"
    )
    # A staff member's reply (human handoff); None for the customer and the bot.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("autor"),
    )
    # Outbound messages: the summary of their deliveries (see Delivery); "" for inbound.
    delivery_status = models.CharField(_("entrega"), max_length=20, blank=True)
    # When a send claimed it (delivery_status "" -> "pending", conversations/delivery.py): a
    # claim left "pending" long after it is taken over by the sweep (delivery_sweep.py).
    delivery_claimed_at = models.DateTimeField(_("envío reclamado"), null=True, blank=True)
    # Customer messages: how many runs took it to answer it (conversations/attempts.py); outbound
    # messages: how many times the sweep took over their interrupted send (delivery_sweep.py). A
    # column of its own, not a metadata key: counting it then rewrites no index entry (a
    # metadata change is never a HOT update, the partial indexes below read metadata). Not a
    # PositiveSmallIntegerField: its CHECK, added to a large table, scans it under lock.
    attempts = models.SmallIntegerField(_("intentos"), default=0, db_default=0, editable=False)
    # Set by the pipeline (arrival time for the inbound message), not on INSERT.
    created_at = models.DateTimeField(_("fecha"), default=timezone.now)
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config=TS_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        verbose_name = _("mensaje")
        verbose_name_plural = _("mensajes")
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["tenant", "conversation", "created_at"], name="msg_tenant_conv"),
            models.Index(fields=["tenant", "created_at"], name="msg_tenant_created"),
            # Only the customer messages still waiting for an answer (see channel_pending_sweep).
            models.Index(
                fields=["created_at"],
                condition=Q(role="user") & ~Q(metadata__has_key="result"),
                name="msg_unanswered",
            ),
            GinIndex(fields=["search_vector"], name="msg_search_vector"),
            # Replies not yet handed to a channel (see channel_pending_sweep).
            models.Index(
                fields=["created_at"],
                condition=Q(role="assistant", delivery_status=""),
                name="msg_unsent",
            ),
            # Sends claimed and never finished (see ai_agents.bulk_claimed_replies_sweep).
            models.Index(
                fields=["created_at"],
                condition=Q(delivery_status="pending"),
                name="msg_claimed",
            ),
            # Statistics (ai_agents/selectors/stats_sql.py and the backfill of the facts kept
            # on the conversation, services/stats_facts.py): staff messages, no-answer replies.
            models.Index(
                fields=["tenant", "conversation", "created_at"],
                condition=Q(author__isnull=False),
                name="msg_staff",
            ),
            models.Index(
                fields=["tenant", "conversation", "created_at"],
                condition=Q(metadata__outcome="no_answer"),
                name="msg_no_answer",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "agent", "channel_message_id"],
                condition=Q(channel_message_id__isnull=False),
                name="msg_unique_channel_message_id",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["user", "assistant", "system", "tool"]),
                name="chk_msg_role",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

"""Agents, contacts and conversations (their messages: messages.py)."""

from __future__ import annotations

import copy
import uuid
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Func, Q, Value
from django.utils.translation import gettext_lazy as _

from ai_agents.config import (
    agent_config_forget,
    escalation_defaults,
    history_defaults,
    intent_defaults,
    processing_defaults,
    validate_escalation_triggers,
    validate_history_config,
    validate_intent_detection,
    validate_processing_config,
    validate_tools_enabled,
)
from ai_agents.models.knowledge import TS_CONFIG
from ai_agents.models.tools import HttpTool
from ai_agents.tools.names import BUILTIN_TOOL_NAMES
from erp.tenancy.models import TenantOwnedModel


def default_fallback_message() -> str:
    return str(
        _("Lo siento, no puedo responder en este momento. Por favor, inténtelo de nuevo más tarde.")
    )


def default_escalation_message() -> str:
    return str(_("Le paso con una persona de nuestro equipo; le responderá en breve."))


class Agent(TenantOwnedModel):
    class Provider(models.TextChoices):
        DEFAULT = "default", _("el configurado en la plataforma")
        GOOGLE = "google", _("Google")
        OPENAI = "openai", _("compatible con OpenAI")
        OFFLINE = "offline", _("sin modelo (sin conexión)")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("nombre"), max_length=200)
    description = models.TextField(_("descripción"), blank=True)
    system_prompt = models.TextField(_("instrucciones del sistema"))
    provider = models.CharField(
        _("proveedor"), max_length=20, choices=Provider.choices, default=Provider.DEFAULT
    )
    model = models.CharField(_("modelo"), max_length=100, blank=True)
    temperature = models.FloatField(
        _("temperatura"), default=0.7, validators=[MinValueValidator(0), MaxValueValidator(2)]
    )
    max_output_tokens = models.PositiveIntegerField(
        _("máximo de tokens de salida"),
        default=1024,
        validators=[MinValueValidator(16), MaxValueValidator(32768)],
    )
    knowledge_bases = models.ManyToManyField(
        "ai_agents.KnowledgeBase",
        blank=True,
        related_name="agents",
        verbose_name=_("bases de conocimiento"),
    )
    tools_enabled = models.JSONField(_("herramientas habilitadas"), default=list, blank=True)
    history_config = models.JSONField(_("historial"), default=history_defaults, blank=True)
    intent_detection = models.JSONField(
        _("detección de intención"), default=intent_defaults, blank=True
    )
    escalation_triggers = models.JSONField(
        _("disparadores de escalación"), default=escalation_defaults, blank=True
    )
    processing_config = models.JSONField(
        _("procesamiento"), default=processing_defaults, blank=True
    )
    fallback_message = models.TextField(_("mensaje de respaldo"), default=default_fallback_message)
    escalation_message = models.TextField(
        _("mensaje de escalación"), default=default_escalation_message
    )
    is_active = models.BooleanField(_("activo"), default=True)
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("agente")
        verbose_name_plural = _("agentes")
        ordering = ["name"]
        indexes = [models.Index(fields=["tenant", "created_at"], name="agent_tenant_created")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """Completes the JSON blocks with defaults; errors name the field and the key."""
        errors: dict[str, list[str]] = {}
        blocks = {
            "history_config": validate_history_config,
            "intent_detection": validate_intent_detection,
            "escalation_triggers": validate_escalation_triggers,
            "processing_config": validate_processing_config,
            "tools_enabled": validate_tools_enabled,
        }
        for name, validate in blocks.items():
            try:
                setattr(self, name, validate(getattr(self, name)))
            except ValidationError as exc:
                errors[name] = exc.messages
        if "tools_enabled" not in errors and self.tools_enabled:
            known = self._known_tools()
            unknown = [name for name in self.tools_enabled if name not in known]
            if unknown:
                errors["tools_enabled"] = [
                    _("Herramienta desconocida: %(names)s (disponibles: %(known)s).")
                    % {"names": ", ".join(unknown), "known": ", ".join(known)}
                ]
        agent_config_forget(self)  # the blocks were rewritten above
        if errors:
            raise ValidationError(errors)

    def _known_tools(self) -> list[str]:
        """The built-in tools and this tenant's HTTP tools."""
        own = HttpTool.objects.for_tenant(self.tenant_id).values_list("name", flat=True)
        return [*BUILTIN_TOOL_NAMES, *sorted(own)]

    @property
    def processing(self) -> dict[str, Any]:
        return _validated(self, "processing_config", validate_processing_config)

    @property
    def history(self) -> dict[str, Any]:
        return _validated(self, "history_config", validate_history_config)


def _validated(agent: Agent, name: str, validate: Any) -> dict[str, Any]:
    """`validate(agent.<name>)` (a copy), kept on the instance while the stored block is equal
    to the one validated (compared by value: a block replaced or edited in place is validated
    again). A message reads these a dozen times; validating each time cost ~0.3 ms of CPU."""
    source = getattr(agent, name)
    kept: dict[str, tuple[Any, dict[str, Any]]] = agent.__dict__.setdefault("_validated", {})
    hit = kept.get(name)
    if hit is None or hit[0] != source:
        hit = kept[name] = (copy.deepcopy(source), validate(source))
    return dict(hit[1])


class Contact(TenantOwnedModel):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    external_id = models.CharField(_("identificador externo"), max_length=100)
    name = models.CharField(_("nombre"), max_length=200, blank=True)
    email = models.EmailField(_("correo"), blank=True)
    phone = models.CharField(_("teléfono"), max_length=40, blank=True)
    custom_attributes = models.JSONField(_("atributos"), default=dict, blank=True)
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)
    # The inbox search (ai_agents/selectors/conversation_search.py): name and e-mail as
    # Spanish accent-folded words, the phone as its digits (trigram index: any part matches).
    search_vector = models.GeneratedField(
        expression=SearchVector("name", "email", config=TS_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    phone_digits = models.GeneratedField(
        expression=Func("phone", Value(r"\D"), Value(""), Value("g"), function="regexp_replace"),
        output_field=models.CharField(max_length=40),
        db_persist=True,
    )

    class Meta:
        verbose_name = _("contacto")
        verbose_name_plural = _("contactos")
        indexes = [
            GinIndex(fields=["search_vector"], name="contact_search_vector"),
            GinIndex(
                fields=["phone_digits"], opclasses=["gin_trgm_ops"], name="contact_phone_trgm"
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "external_id"], name="contact_unique_external_id"
            )
        ]

    def __str__(self) -> str:
        return self.name or self.external_id


# What the statistics read of a conversation (the covering index conv_tenant_started).
STATS_COLUMNS = [
    "agent",
    "channel",
    "status",
    "closed_at",
    "escalated_at",
    "escalation_reason",
    "escalated_to",
    "assigned_to",
    "claimed_at",
    "satisfaction_rating",
    "customer_messages",
    "assistant_messages",
    "first_bot_response_ms",
    "first_human_response_ms",
    "staff_involved",
    "no_answer_replies",
    "cost_usd",
]


class Conversation(TenantOwnedModel):
    class Status(models.TextChoices):
        ACTIVE = "active", _("activa")
        ESCALATED = "escalated", _("escalada")
        CLOSED = "closed", _("cerrada")
        EXPIRED = "expired", _("expirada")

    OPEN_STATUSES = (Status.ACTIVE, Status.ESCALATED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations")
    channel = models.CharField(_("canal"), max_length=50)  # api, whatsapp, webchat, email
    channel_conversation_id = models.CharField(_("id en el canal"), max_length=255, blank=True)
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="conversations"
    )
    contact_identifier = models.CharField(
        _("identificador del contacto"), max_length=100, blank=True
    )
    status = models.CharField(
        _("estado"), max_length=20, choices=Status.choices, default=Status.ACTIVE
    )
    escalated_at = models.DateTimeField(_("escalada el"), null=True, blank=True)
    # The staff member the escalation went to: set when a person claims the conversation.
    escalated_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("escalada a"),
    )
    # RN-7: the conversation of the same thread that ended (expired or closed) before this one.
    previous_conversation = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("conversación anterior"),
    )
    # Reminders to the team while an escalated conversation waits for a person
    # (ai_agents/services/handoff_renotify.py).
    renotified_at = models.DateTimeField(_("último recordatorio"), null=True, editable=False)
    renotify_count = models.PositiveSmallIntegerField(_("recordatorios"), default=0, editable=False)
    # The channel binding replies go out through (None for the REST channel).
    binding = models.ForeignKey(
        "ai_agents.ChannelBinding",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversations",
        verbose_name=_("canal"),
    )
    # Human handoff: the staff member holding the conversation, until the lease ends (renewed
    # by their activity). While held, the bot never speaks.
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("atendida por"),
    )
    claim_expires_at = models.DateTimeField(_("reserva hasta"), null=True, blank=True)
    # When the current holder took it (the inbox shows "since"; renewals keep it).
    claimed_at = models.DateTimeField(_("reclamada el"), null=True, blank=True, editable=False)
    # The engine's turn (ai_agents/conversations/engine.py): the run answering this
    # conversation's messages holds it until it releases it or it expires (a killed worker).
    # A lease, not a lock: no transaction and no connection is held while the model works.
    turn_token = models.UUIDField(_("turno"), null=True, blank=True, editable=False)
    turn_expires_at = models.DateTimeField(_("turno hasta"), null=True, blank=True, editable=False)
    # The customer's last message (WhatsApp's 24-hour customer-service window).
    last_inbound_at = models.DateTimeField(_("último mensaje del cliente"), null=True, blank=True)
    # Channel facts of the thread (e-mail subject and references, WhatsApp wa_id...).
    channel_data = models.JSONField(_("datos del canal"), default=dict, blank=True)
    escalation_reason = models.CharField(_("motivo de escalación"), max_length=100, blank=True)
    escalation_priority = models.CharField(_("prioridad"), max_length=10, blank=True)
    # Why it was escalated, in facts a person can read (ai_agents/rules/escalation_labels.py):
    # {"reason", "priority", "trigger", "layer", "detail", "summary", "at"}; written with the
    # status by the engine's guarded UPDATE, the summary improved by the notifying task.
    escalation_info = models.JSONField(_("datos de la escalación"), default=dict, blank=True)
    # Consecutive model failures (timeouts, outages) of this conversation: the failure
    # escalation waits for processing_config.failures_before_escalation; a success resets it.
    model_failures = models.IntegerField(_("fallos seguidos del modelo"), default=0)
    session_variables = models.JSONField(_("variables de sesión"), default=dict, blank=True)
    # The cached summary of the history cut out of the prompt (strategies summarize / smart):
    # {"text", "upto_message_id", "count"}; see ai_agents/services/history_summary.py.
    history_summary = models.JSONField(_("resumen del historial"), default=dict, blank=True)
    message_count = models.IntegerField(_("mensajes"), default=0)
    tokens_used = models.IntegerField(_("tokens"), default=0)
    satisfaction_rating = models.IntegerField(
        _("satisfacción"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(5)],
    )
    feedback_text = models.TextField(_("comentario"), blank=True)
    started_at = models.DateTimeField(_("iniciada"), auto_now_add=True)
    last_message_at = models.DateTimeField(_("último mensaje"), auto_now_add=True)
    closed_at = models.DateTimeField(_("cerrada el"), null=True, blank=True)
    # Statistics facts (ai_agents/selectors/stats_sql.py), written with the message that makes
    # them, in the same UPDATE as the counters above: the customer's messages and the bot's
    # and the team's (system notes and tool rows are not counted), when the customer first
    # wrote, how long the bot took to answer that first message, how long a person took to
    # write after the escalation, whether a person wrote, and the bot's "no answer" replies.
    # Rows made before them were filled in by migration 0023 (services/stats_facts.py).
    customer_messages = models.IntegerField(_("mensajes del cliente"), default=0, editable=False)
    assistant_messages = models.IntegerField(
        _("mensajes del bot y del equipo"), default=0, editable=False
    )
    first_customer_at = models.DateTimeField(
        _("primer mensaje del cliente"), null=True, editable=False
    )
    first_bot_response_ms = models.IntegerField(
        _("primera respuesta del bot (ms)"), null=True, editable=False
    )
    first_human_response_ms = models.IntegerField(
        _("primera respuesta de una persona (ms)"), null=True, editable=False
    )
    staff_involved = models.BooleanField(_("respondió una persona"), default=False, editable=False)
    no_answer_replies = models.IntegerField(_("respuestas sin datos"), default=0, editable=False)
    # What the conversation cost (USD): the sum of its usage rows (model calls, transcriptions,
    # the channel's charges), added by the statement that writes each row
    # (erp/llm/conversation_cost.py); rows made before it were summed by migration 0025.
    cost_usd = models.DecimalField(
        _("costo (USD)"), max_digits=14, decimal_places=6, default=Decimal("0"), editable=False
    )

    class Meta:
        verbose_name = _("conversación")
        verbose_name_plural = _("conversaciones")
        ordering = ["-last_message_at"]
        indexes = [
            models.Index(fields=["tenant", "status", "last_message_at"], name="conv_tenant_status"),
            # The inbox list (any status), latest activity first: a search walks it in order.
            models.Index(fields=["tenant", "last_message_at"], name="conv_tenant_last"),
            models.Index(fields=["tenant", "agent", "last_message_at"], name="conv_tenant_agent"),
            models.Index(
                fields=["tenant", "channel", "channel_conversation_id"], name="conv_tenant_channel"
            ),
            # Statistics: the period's conversations, and "did a new one follow within 72 h".
            # Covering: a year's figures are read from the index (facts above included).
            models.Index(
                fields=["tenant", "started_at"],
                include=STATS_COLUMNS,
                name="conv_tenant_started",
            ),
            models.Index(
                fields=["tenant", "previous_conversation"],
                condition=Q(previous_conversation__isnull=False),
                name="conv_previous",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["active", "escalated", "closed", "expired"]),
                name="chk_conv_status",
            ),
            # At most one open conversation per contact thread: concurrent first messages
            # meet here and share it.
            models.UniqueConstraint(
                fields=["tenant", "agent", "channel", "channel_conversation_id"],
                condition=Q(status__in=["active", "escalated"]),
                name="conv_one_open_per_thread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.channel}:{self.channel_conversation_id}"

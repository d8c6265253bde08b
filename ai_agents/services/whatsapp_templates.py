"""WhatsApp templates: the sync of a binding's templates from the Graph API, and a template
sent from the inbox by the person holding the conversation (any time: a template is what
WhatsApp allows outside the 24-hour window).

The sync reads every page before writing anything (no transaction or connection held while
Graph answers); then, in one transaction, rows are created or updated by (name, language) and
the ones Meta no longer lists are marked DELETED (kept: a follow-up may point at them; never
offered nor sent). A page that cannot be read changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.channels.whatsapp.graph import GraphClient
from ai_agents.channels.whatsapp.templates import (
    VALUE_MAX_CHARS,
    VALUE_REFUSED,
    TemplateInfo,
    TemplatesUnavailable,
    template_render,
    template_send_spec,
    templates_fetch,
)
from ai_agents.models import ChannelBinding, Conversation, Message, TemplateSend, WhatsAppTemplate
from ai_agents.rules.inbox_labels import template_language_label
from ai_agents.services.handoff import HandoffError, InvalidReply, staff_message_store
from erp.db import connection_release
from erp.storable import storable_text
from erp.tenancy.scoping import acts_for

logger = logging.getLogger(__name__)

CLIENT_KEY_MAX = 100
DELETED = WhatsAppTemplate.Status.DELETED


class TemplateSyncError(HandoffError):
    code = "templates_unavailable"
    status = 502


class TemplateNotSendable(HandoffError):
    code = "template_not_sendable"
    status = 400


@dataclass(frozen=True)
class SyncResult:
    created: int = 0
    updated: int = 0
    removed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "removed": self.removed}


@acts_for("binding")
def whatsapp_templates_sync(*, binding: ChannelBinding) -> SyncResult:
    """Reads the binding's templates from Graph and stores them. Raises TemplateSyncError
    (nothing changed) when the account cannot be read or the binding has no WABA id."""
    if binding.type != ChannelBinding.Type.WHATSAPP or not binding.waba_id:
        raise TemplateSyncError(_("El canal no tiene id de cuenta de WhatsApp Business."))
    connection_release()  # nothing held while Graph answers
    try:
        found = templates_fetch(GraphClient(access_token=binding.access_token), binding.waba_id)
    except TemplatesUnavailable as exc:
        logger.warning(
            "whatsapp.templates_sync_failed",
            extra={"binding_id": str(binding.pk), "error_code": exc.code},
        )
        raise TemplateSyncError(
            _("No se pudieron leer las plantillas de WhatsApp (%(code)s).") % {"code": exc.code}
        ) from exc
    return _templates_store(binding, found)


def _templates_store(binding: ChannelBinding, found: list[TemplateInfo]) -> SyncResult:
    now = timezone.now()
    rows = WhatsAppTemplate.objects.for_tenant(binding.tenant_id)
    created = updated = 0
    with transaction.atomic():
        # Two syncs of the channel at once (the daily task, the admin's action) take turns:
        # the second reads the rows the first committed instead of inserting them again.
        channels = ChannelBinding.objects.for_tenant(binding.tenant_id).select_for_update()
        channels.filter(pk=binding.pk).values_list("pk", flat=True).first()
        known = {(t.name, t.language): t for t in rows.select_for_update().filter(binding=binding)}
        seen: set[tuple[str, str]] = set()
        for info in found:
            key = (info.name, info.language)
            if key in seen:
                continue
            seen.add(key)
            fields = {
                "external_id": info.external_id,
                "category": info.category,
                "status": info.status,
                "body_text": info.body_text,
                "variables": info.variables,
                "parameter_format": info.parameter_format,
                "synced_at": now,
            }
            row = known.get(key)
            if row is None:
                rows.create(
                    tenant_id=binding.tenant_id,
                    binding=binding,
                    name=info.name,
                    language=info.language,
                    **fields,
                )
                created += 1
            else:
                for name, value in fields.items():
                    setattr(row, name, value)
                row.save(update_fields=list(fields))
                updated += 1
        # Kept, not deleted: an owner's follow-up points at it (a wrong WABA id must not lose
        # it); DELETED is neither offered nor sent, and a later listing restores the status.
        gone = [r.pk for key, r in known.items() if key not in seen and r.status != DELETED]
        removed = rows.filter(pk__in=gone).update(status=DELETED, synced_at=now) if gone else 0
    logger.info(
        "whatsapp.templates_synced",
        extra={"binding_id": str(binding.pk), "added": created, "removed": removed},
    )
    return SyncResult(created=created, updated=updated, removed=removed)


def whatsapp_templates_sync_all() -> int:
    """Beat (daily) and the command: every active WhatsApp binding with a WABA id, the least
    recently synced first (a run cut short by its time limit starts with the others next
    time). A binding that fails, even unexpectedly, is logged and skipped: the others go on.
    Returns how many were synced."""
    bindings = (
        ChannelBinding.objects.unscoped()
        .filter(type=ChannelBinding.Type.WHATSAPP, is_active=True)
        .exclude(waba_id="")
        .annotate(last_sync=Max("templates__synced_at"))
        .order_by(F("last_sync").asc(nulls_first=True), "created_at")
    )
    done = failed = 0
    for binding in list(bindings):
        try:
            whatsapp_templates_sync(binding=binding)
        except TemplateSyncError:
            failed += 1  # logged by the sync
            continue
        except SoftTimeLimitExceeded:
            raise  # the task's time is up: stop here (the next run starts with the rest)
        except Exception:
            logger.exception(
                "whatsapp.templates_sync_crashed", extra={"binding_id": str(binding.pk)}
            )
            failed += 1
            continue
        done += 1
    logger.info("whatsapp.templates_sync_all", extra={"synced": done, "failed": failed})
    return done


def approved_templates(conversation: Conversation) -> list[WhatsAppTemplate]:
    """What the inbox offers on a WhatsApp conversation: its binding's approved templates."""
    if conversation.channel != "whatsapp" or conversation.binding_id is None:
        return []
    return list(
        WhatsAppTemplate.objects.for_tenant(conversation.tenant_id)
        .filter(binding_id=conversation.binding_id, status=WhatsAppTemplate.Status.APPROVED)
        .order_by("name", "language")
    )


def template_json(template: WhatsAppTemplate) -> dict[str, Any]:
    return {
        "id": template.pk,
        "name": template.name,
        "language": template.language,
        "language_label": template_language_label(template.language),
        "category": template.category,
        "status": template.status,
        "body_text": template.body_text,
        "variables": template.variables,
    }


def template_values_clean(template: WhatsAppTemplate, values: Any) -> list[str]:
    """One non-empty string per variable, in order, each at most VALUE_MAX_CHARS, storable and
    with no newline, tab or more than four spaces in a row (Meta refuses them)."""
    variables = list(template.variables or [])
    if not isinstance(values, list) or len(values) != len(variables):
        raise InvalidReply(
            _("La plantilla necesita %(n)s valores.") % {"n": len(variables)}, field="variables"
        )
    cleaned = []
    for value in values:
        if (
            not isinstance(value, str)
            or not value.strip()
            or len(value) > VALUE_MAX_CHARS
            or storable_text(value) is not value  # NUL or a lone surrogate: not storable
        ):
            raise InvalidReply(
                _("Cada variable necesita un texto de 1 a %(n)s caracteres.")
                % {"n": VALUE_MAX_CHARS},
                field="variables",
            )
        if VALUE_REFUSED.search(value):
            raise InvalidReply(
                _(
                    "Las variables de una plantilla no admiten saltos de línea, tabuladores ni "
                    "más de cuatro espacios seguidos."
                ),
                field="variables",
            )
        cleaned.append(value.strip())
    return cleaned


def template_message_metadata(
    template: WhatsAppTemplate, values: list[str]
) -> tuple[str, dict[str, Any]]:
    """The text the customer reads and the message's metadata (what the adapter sends)."""
    variables = list(template.variables or [])
    spec = template_send_spec(
        name=template.name,
        language=template.language,
        variables=variables,
        values=values,
        named=template.parameter_format == "NAMED",
    )
    text = template_render(template.body_text, dict(zip(variables, values, strict=True)))
    chosen = {
        "name": template.name,
        "language": template.language,
        "language_label": template_language_label(template.language),
        "category": template.category,
        **({"components": spec["components"]} if "components" in spec else {}),
    }
    return text or template.name, {"human": True, "wa_template": chosen}


def conversation_template_send(
    *, conversation: Conversation, user: Any, template_id: Any, values: Any, client_key: str
) -> tuple[Message, bool]:
    """Stores the template as the holder's message and queues its send. A repeat with the
    same `client_key` returns the first message (False: not created again)."""
    first = _sent_before(conversation, client_key)
    if first is not None:
        return first, False
    template = (
        WhatsAppTemplate.objects.for_tenant(conversation.tenant_id)
        .filter(pk=template_id if _is_id(template_id) else None)
        .first()
    )
    if template is None or template.binding_id != conversation.binding_id or not template.approved:
        raise TemplateNotSendable(
            _("Elija una plantilla aprobada del canal de esta conversación."), field="template_id"
        )
    text, metadata = template_message_metadata(template, template_values_clean(template, values))

    def keep_key(message: Message) -> None:
        TemplateSend.objects.for_tenant(conversation.tenant_id).create(
            tenant_id=conversation.tenant_id,
            conversation=conversation,
            client_key=client_key,
            message=message,
        )

    try:
        message = staff_message_store(
            conversation, user, content=text, metadata=metadata, within=keep_key
        )
    except IntegrityError:  # the same key sent twice at once: the other one stored it
        first = _sent_before(conversation, client_key)
        if first is None:
            raise
        return first, False
    return message, True


def _is_id(value: Any) -> bool:
    """A positive integer that fits a bigint (anything else matches no template)."""
    return isinstance(value, int | str) and str(value).isdigit() and len(str(value)) <= 18


def _sent_before(conversation: Conversation, client_key: str) -> Message | None:
    row = (
        TemplateSend.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation, client_key=client_key)
        .select_related("message")
        .first()
    )
    return row.message if row is not None else None

"""The template the bot may send once a WhatsApp conversation's 24-hour window has closed.

The binding's `whatsapp_template` names it (name + language); it goes out only when the
binding's synced templates (`WhatsAppTemplate`, read from the Graph API) list it APPROVED and
its body has no variables (the bot has no values for them). Its category, for billing, is the
synced row's. The owner's configuration is checked by the same rule (`ai_agents.services.
channels`), but a template may be paused, rejected, edited or removed in Meta afterwards: the
check at send time is the authority.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from ai_agents.models import ChannelBinding, WhatsAppTemplate


def synced_template(
    binding: ChannelBinding, *, name: str, language: str
) -> WhatsAppTemplate | None:
    """The binding's synced row for this name and language (any status), or None."""
    if binding.tenant_id is None:  # a binding being added in the admin: nothing synced yet
        return None
    return (
        WhatsAppTemplate.objects.for_tenant(binding.tenant_id)
        .filter(binding_id=binding.pk, name=name, language=language)
        .first()
    )


def bot_template_problem(row: WhatsAppTemplate | None, *, name: str, language: str) -> str:
    """Why the bot may not send this template ("" when it may), in the reader's language."""
    names = {"name": name, "language": language}
    if row is None:
        return (
            _(
                "La plantilla «%(name)s» (%(language)s) no está entre las plantillas sincronizadas "
                "del canal: sincronice las plantillas de WhatsApp o elija otra."
            )
            % names
        )
    if row.status == WhatsAppTemplate.Status.DELETED:
        return (
            _(
                "La plantilla «%(name)s» (%(language)s) ya no está en la cuenta de WhatsApp "
                "Business: elija otra."
            )
            % names
        )
    if not row.approved:
        return _(
            "La plantilla «%(name)s» (%(language)s) no está aprobada en Meta (estado: %(status)s)."
        ) % {**names, "status": _status_label(row.status)}
    if row.variables:
        return (
            _(
                "La plantilla «%(name)s» (%(language)s) tiene variables que el asistente no puede "
                "rellenar: elija una plantilla aprobada sin variables."
            )
            % names
        )
    return ""


def _status_label(status: str) -> str:
    statuses = WhatsAppTemplate.Status
    return str(statuses(status).label) if status in statuses.values else status


def bot_template_pick(binding: ChannelBinding) -> tuple[dict[str, Any] | None, str]:
    """The send spec (name, language, category) of the binding's template when the bot may
    send it; else None and why not (no template configured, or `bot_template_problem`)."""
    configured = binding.whatsapp_template if isinstance(binding.whatsapp_template, dict) else {}
    name, language = str(configured.get("name") or ""), str(configured.get("language") or "")
    if not name:
        return None, _("El canal no tiene ninguna plantilla configurada para el asistente.")
    row = synced_template(binding, name=name, language=language)
    problem = bot_template_problem(row, name=name, language=language)
    if row is None or problem:
        return None, problem
    return {"name": row.name, "language": row.language, "category": row.category}, ""

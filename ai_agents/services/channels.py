"""Channel binding writes, with one set of rules for the REST API and the admin.

Each type has its own fields; a field of another type is refused rather than silently kept, so a
typo ("adress") or a mix-up is a readable 400 instead of a binding that never works.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.channels.webchat.appearance import appearance_clean
from ai_agents.channels.webchat.origins import OriginInvalid, origin_pattern_clean
from ai_agents.channels.whatsapp.bot_template import bot_template_problem, synced_template
from ai_agents.models import Agent, ChannelBinding
from erp.llm.models import TEMPLATE_CATEGORIES
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import acts_for

# The API's and the admin's help for a WhatsApp channel's `whatsapp_template` (one rule:
# `bot_template_problem`).
WHATSAPP_TEMPLATE_HELP = gettext_lazy(
    '{"name": "plantilla", "language": "es"} o {}: una plantilla aprobada y sincronizada del '
    "canal, sin variables (la que envía el asistente con la ventana de 24 h cerrada)."
)

COMMON_FIELDS = ("agent", "name", "is_active")
TYPE_FIELDS: dict[str, tuple[str, ...]] = {
    ChannelBinding.Type.WHATSAPP: (
        "phone_number_id",
        "access_token",
        "whatsapp_template",
        "waba_id",
    ),
    ChannelBinding.Type.EMAIL: ("address",),
    ChannelBinding.Type.WEBCHAT: ("allowed_origins", "appearance"),
}
ALL_TYPE_FIELDS = frozenset(f for fields in TYPE_FIELDS.values() for f in fields)
MAX_ORIGINS = 50

_PHONE_NUMBER_ID = re.compile(r"^\d{5,30}$")
_TEMPLATE_NAME = re.compile(r"^[a-z0-9_]{1,512}$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(?:_[A-Za-z]{2,4})?$")


class PhoneNumberTaken(ValidationError):
    """The WhatsApp number is bound already (to this or another tenant): numbers route
    webhooks before any tenant is known, so they are unique on the platform."""


@acts_for("tenant")
def channel_create(*, tenant: Tenant, data: Mapping[str, Any]) -> ChannelBinding:
    kind = data.get("type")
    if not kind:
        raise ValidationError({"type": [_("Indique el tipo de canal.")]})
    if kind not in TYPE_FIELDS:
        raise ValidationError({"type": [_("Tipo no válido: use whatsapp, email o webchat.")]})
    binding = ChannelBinding(tenant=tenant, type=kind)
    if "agent" not in data:
        raise ValidationError({"agent": [_("Indique el agente.")]})
    _apply(binding, data, creating=True)
    return _save(binding)


@acts_for("binding")
def channel_update(*, binding: ChannelBinding, data: Mapping[str, Any]) -> ChannelBinding:
    if "type" in data and data["type"] != binding.type:
        raise ValidationError(
            {"type": [_("El tipo de un canal no se puede cambiar; cree otro canal.")]}
        )
    _apply(binding, data, creating=False)
    return _save(binding)


@acts_for("binding")
def channel_delete(*, binding: ChannelBinding) -> None:
    binding.delete()


def _apply(binding: ChannelBinding, data: Mapping[str, Any], *, creating: bool) -> None:
    allowed = set(COMMON_FIELDS) | set(TYPE_FIELDS[binding.type])
    foreign = sorted(k for k in data if k in ALL_TYPE_FIELDS and k not in allowed)
    if foreign:
        raise ValidationError(
            {
                foreign[0]: [
                    _("Este campo no corresponde a un canal de tipo %(type)s.")
                    % {"type": binding.type}
                ]
            }
        )
    if "agent" in data:
        binding.agent = tenant_agent(binding.tenant, data["agent"])
    for field in ("name", "is_active"):
        if field in data:
            setattr(binding, field, data[field])
    for field in TYPE_FIELDS[binding.type]:
        if field in data:
            setattr(binding, field, CLEANERS[field](data[field]))
    channel_check(binding)


def channel_check(binding: ChannelBinding) -> None:
    """What a binding of its type needs to work; raises ValidationError (field -> messages)."""
    missing: dict[str, list[str]] = {}
    if binding.type == ChannelBinding.Type.WHATSAPP:
        if not binding.phone_number_id:
            missing["phone_number_id"] = [_("Indique el id del número de WhatsApp.")]
        if not binding.access_token:
            missing["access_token"] = [_("Indique el token de acceso de la API de WhatsApp.")]
    elif binding.type == ChannelBinding.Type.EMAIL:
        if not binding.address:
            missing["address"] = [_("Indique la dirección de correo del canal.")]
    elif binding.type == ChannelBinding.Type.WEBCHAT and not binding.allowed_origins:
        missing["allowed_origins"] = [
            _("Indique al menos un origen donde se insertará el chat, p. ej. https://tienda.es.")
        ]
    if missing:
        raise ValidationError(missing)
    if binding.type == ChannelBinding.Type.WHATSAPP:
        taken = (
            ChannelBinding.objects.unscoped()
            .filter(type=ChannelBinding.Type.WHATSAPP, phone_number_id=binding.phone_number_id)
            .exclude(pk=binding.pk)
            .exists()
        )
        if taken:
            raise _phone_taken()
        bot_template_check(binding)


def bot_template_check(binding: ChannelBinding) -> None:
    """A `whatsapp_template` set or changed must be an APPROVED synced template of this
    binding without body variables (`bot_template_problem`); its category is the synced one.
    An unchanged one is not checked again (a template paused in Meta must not block renaming
    the channel): the send checks it each time and tells the team when it cannot go."""
    configured = binding.whatsapp_template or {}
    if not configured.get("name"):
        return
    name, language = configured["name"], configured["language"]
    row = synced_template(binding, name=name, language=language)
    if _template_changed(binding):
        problem = bot_template_problem(row, name=name, language=language)
        if problem:
            raise ValidationError({"whatsapp_template": [problem]})
        given = configured.get("category")
        if row is not None and given and given != row.category:
            raise ValidationError(
                {
                    "whatsapp_template": [
                        _("La categoría de esta plantilla en Meta es «%(category)s».")
                        % {"category": row.category}
                    ]
                }
            )
    if row is not None and row.category:
        binding.whatsapp_template = {"name": name, "language": language, "category": row.category}


def _template_changed(binding: ChannelBinding) -> bool:
    if binding.tenant_id is None:
        return True  # being added
    stored = (
        ChannelBinding.objects.for_tenant(binding.tenant_id)
        .filter(pk=binding.pk)
        .values_list("whatsapp_template", flat=True)
        .first()
    )
    stored = stored if isinstance(stored, dict) else {}
    configured = binding.whatsapp_template or {}
    return (stored.get("name"), stored.get("language")) != (
        configured.get("name"),
        configured.get("language"),
    )


def _phone_taken() -> PhoneNumberTaken:
    return PhoneNumberTaken(
        {"phone_number_id": [_("Este número de WhatsApp ya está conectado a otro canal.")]},
    )


def _save(binding: ChannelBinding) -> ChannelBinding:
    try:
        with transaction.atomic():
            binding.save()
    except IntegrityError:
        # Two requests binding the same number at once: the constraint decides.
        raise _phone_taken() from None
    return binding


def tenant_agent(tenant: Tenant, value: Any) -> Agent:
    """The tenant's agent with this id; another tenant's agent is "not found" like a missing one."""
    if isinstance(value, Agent):
        value = value.pk
    try:
        agent_id = uuid.UUID(str(value))
    except ValueError:
        raise ValidationError({"agent": [_("Identificador de agente no válido.")]}) from None
    agent = Agent.objects.for_tenant(tenant).filter(pk=agent_id).first()
    if agent is None:
        raise ValidationError({"agent": [_("Agente no encontrado.")]})
    return agent


# --- Field cleaners -------------------------------------------------------------------------
def clean_phone_number_id(value: Any) -> str:
    text = str(value or "").strip()
    if not _PHONE_NUMBER_ID.match(text):
        raise ValidationError(
            {
                "phone_number_id": [
                    _("El id del número es el identificador numérico que da Meta (solo cifras).")
                ]
            }
        )
    return text


def clean_waba_id(value: Any) -> str:
    text = str(value or "").strip()
    if not _PHONE_NUMBER_ID.match(text):
        raise ValidationError(
            {"waba_id": [_("El id de la cuenta de WhatsApp Business es numérico (solo cifras).")]}
        )
    return text


def clean_access_token(value: Any) -> str:
    text = str(value or "").strip()
    if not text:
        raise ValidationError({"access_token": [_("El token de acceso no puede estar vacío.")]})
    if len(text) > 4000 or any(c.isspace() for c in text):
        raise ValidationError({"access_token": [_("El token de acceso no es válido.")]})
    return text


def clean_whatsapp_template(value: Any) -> dict[str, str]:
    if value in (None, "", {}):
        return {}
    error = ValidationError(
        {
            "whatsapp_template": [
                _(
                    'Debe ser {"name": "nombre_de_plantilla", "language": "es"}: una plantilla '
                    "aprobada y sincronizada del canal, sin variables; «category» es opcional "
                    "(marketing, utility o authentication) y se toma de la plantilla sincronizada."
                )
            ]
        }
    )
    if not isinstance(value, Mapping) or set(value) - {"category"} != {"name", "language"}:
        raise error
    name, language = value["name"], value["language"]
    category = value.get("category", "")
    if not isinstance(name, str) or not isinstance(language, str):
        raise error
    if not _TEMPLATE_NAME.match(name) or not _LANGUAGE.match(language):
        raise error
    if category and category not in TEMPLATE_CATEGORIES:
        raise error
    return {"name": name, "language": language, **({"category": category} if category else {})}


def clean_address(value: Any) -> str:
    text = str(value or "").strip()
    try:
        validate_email(text)
    except ValidationError:
        raise ValidationError(
            {"address": [_("Indique una dirección de correo válida, p. ej. ayuda@tienda.es.")]}
        ) from None
    local, _at, domain = text.rpartition("@")
    return f"{local}@{domain.lower()}"


def clean_allowed_origins(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        raise ValidationError(
            {"allowed_origins": [_('Debe ser una lista, p. ej. ["https://tienda.es"].')]}
        )
    if len(value) > MAX_ORIGINS:
        raise ValidationError(
            {"allowed_origins": [_("Como mucho %(n)s orígenes.") % {"n": MAX_ORIGINS}]}
        )
    origins: list[str] = []
    for item in value:
        origin = origin_clean(item)
        if origin not in origins:
            origins.append(origin)
    return origins


def origin_clean(item: Any) -> str:
    """One origin pattern by the web chat's rule (`ai_agents.channels.webchat.origins`: exact
    origins and `https://*.domain`), as stored."""
    try:
        return origin_pattern_clean(item)
    except OriginInvalid as exc:
        raise ValidationError({"allowed_origins": [str(exc)]}) from None


CLEANERS = {
    "phone_number_id": clean_phone_number_id,
    "access_token": clean_access_token,
    "whatsapp_template": clean_whatsapp_template,
    "waba_id": clean_waba_id,
    "address": clean_address,
    "allowed_origins": clean_allowed_origins,
    "appearance": appearance_clean,
}

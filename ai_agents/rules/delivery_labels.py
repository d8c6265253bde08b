"""A message's delivery told in words: its status (sent, delivered, read, failed...) and, when
it failed, why. Codes come from the channels (WhatsApp Graph error codes, `smtp_<code>` from
the e-mail adapter, our own `outside_24h_window`...); people never see them: an unknown code
reads as a generic reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

STATUS_LABELS = {
    "pending": gettext_lazy("Enviando…"),
    "sent": gettext_lazy("Enviado"),
    "delivered": gettext_lazy("Entregado"),
    "read": gettext_lazy("Leído"),
    "failed": gettext_lazy("No entregado"),
    "suppressed": gettext_lazy("No enviado: la conversación la atiende una persona"),
}
# Status order: a status never moves a message backwards (read stays read when a late
# "delivered" arrives); failed is final.
RANK = {"": 0, "pending": 1, "sent": 2, "delivered": 3, "read": 4, "failed": 5}

ERROR_LABELS = {
    # WhatsApp Cloud API (by code, never by title)
    "131047": gettext_lazy(
        "Han pasado más de 24 horas desde el último mensaje del cliente: WhatsApp solo admite "
        "plantillas aprobadas"
    ),
    "outside_24h_window": gettext_lazy(
        "Han pasado más de 24 horas desde el último mensaje del cliente: WhatsApp solo admite "
        "plantillas aprobadas"
    ),
    "131026": gettext_lazy(
        "WhatsApp no pudo entregarlo: el número no usa WhatsApp o su aplicación no lo admite"
    ),
    "131049": gettext_lazy("WhatsApp no lo entregó para cuidar la experiencia del cliente"),
    "131048": gettext_lazy("WhatsApp limitó los envíos de este número por posible spam"),
    "131053": gettext_lazy("WhatsApp no pudo procesar el archivo adjunto"),
    "130429": gettext_lazy("Se alcanzó el límite de envíos de WhatsApp; inténtelo más tarde"),
    "131056": gettext_lazy("Demasiados mensajes seguidos a este cliente; espere un poco"),
    "190": gettext_lazy("El token de acceso de WhatsApp ha caducado o no es válido"),
    "timeout": gettext_lazy("El canal no respondió a tiempo"),
    "connection": gettext_lazy("No se pudo conectar con el canal"),
    # a send a dead worker left half done, older than a day (conversations/delivery_sweep.py)
    "send_interrupted": gettext_lazy("El envío se interrumpió y no se reintentó"),
    # e-mail
    "bounced": gettext_lazy("El correo fue devuelto por el servidor del destinatario"),
    "no_recipient": gettext_lazy("El cliente no tiene dirección de correo"),
    "smtp_disconnected": gettext_lazy("El servidor de correo cortó la conexión"),
    "smtp_unreachable": gettext_lazy("No se pudo conectar con el servidor de correo"),
}


def delivery_status_label(status: str) -> str:
    """The status in the active language; "" for none (inbound messages, REST replies)."""
    if not status:
        return ""
    return str(STATUS_LABELS.get(status) or _("Estado de entrega desconocido"))


def delivery_error_label(code: str) -> str:
    """Why a delivery failed, in the active language; a generic reason for an unknown code."""
    code = str(code or "")
    if code in ERROR_LABELS:
        return str(ERROR_LABELS[code])
    if code.startswith("smtp_5"):
        return _("El servidor de correo rechazó el mensaje")
    if code.startswith("smtp_"):
        return _("El servidor de correo no aceptó el mensaje por ahora")
    return _("El canal no pudo entregar el mensaje")


def failure_code(deliveries: Iterable[Any], metadata: Mapping[str, Any] | None) -> str:
    """The code of a failed message's first failed delivery row (else the one the engine put in
    its metadata when no row was written)."""
    codes = [d.error_code for d in deliveries if d.status == "failed"]
    if codes:
        return str(codes[0])
    return str(((metadata or {}).get("delivery_error") or {}).get("code") or "")


def delivery_text(status: str, error_code: str = "") -> str:
    """Status and, when it failed, why, in one line: "No entregado: <reason in words>"."""
    label = delivery_status_label(status)
    if status == "failed":
        label = f"{label}: {delivery_error_label(error_code)}"
    return label


def status_moves_forward(current: str, new: str) -> bool:
    """True when `new` is further than `current` (a repeated or late status changes nothing)."""
    return RANK.get(new, 0) > RANK.get(current, 0)

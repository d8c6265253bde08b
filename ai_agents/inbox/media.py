"""Voice notes and images in the staff inbox: what the timeline shows beside a customer's
message (the transcript is its text; a player when the tenant keeps audio), and the kept file
itself, to members of the conversation's tenant only."""

from __future__ import annotations

import mimetypes
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from ai_agents.models import Message
from ai_agents.services.media_store import media_path
from erp.tenancy.selectors import tenant_ids_for


def media_view(message: Message) -> dict[str, Any] | None:
    """{"kind", "label", "url"} for a voice note or image the pipeline read; None otherwise.
    `url` only while the file is kept."""
    facts = (message.metadata or {}).get("media") or {}
    kind = facts.get("kind")
    if kind not in ("audio", "image"):
        return None
    labels = {
        ("audio", "transcription"): _("Nota de voz, transcrita"),
        ("image", "description"): _("Imagen, descrita"),
    }
    default = _("Nota de voz sin transcribir") if kind == "audio" else _("Imagen recibida")
    url = ""
    if facts.get("file"):
        url = reverse("inbox-media", args=[message.conversation_id, message.pk])
    return {
        "kind": kind,
        "label": labels.get((str(kind), str(facts.get("source") or "")), default),
        "url": url,
    }


@require_GET
@staff_member_required
def inbox_media(request: HttpRequest, conversation_id: Any, message_id: Any) -> HttpResponse:
    """The kept file, if the message is in one of the user's tenants (404 otherwise, the same
    for "missing" and "not yours")."""
    message = (
        Message.objects.unscoped()
        .filter(
            pk=message_id,
            conversation_id=conversation_id,
            tenant_id__in=tenant_ids_for(request.user),
            role=Message.Role.USER,
        )
        .first()
    )
    path = media_path(message) if message is not None else None
    if path is None:
        raise Http404
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    # At most WHATSAPP_MEDIA_MAX_BYTES (16 MB), read whole: ASGI serves it without a sync iterator.
    response = HttpResponse(path.read_bytes(), content_type=content_type)
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response

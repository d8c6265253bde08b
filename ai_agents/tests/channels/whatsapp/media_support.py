"""What the WhatsApp media tests share: the reference payloads' media ids, bytes, the token
of `support.wa_binding`, the media folder (fixture `media_root`) and readers of what the
fakes saw."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from erp.llm.models import UsageLog
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph

AUDIO_ID = "1177845126715924"  # whatsapp_audio_voice.json
IMAGE_ID = "1003383421387256"  # whatsapp_image.json
VOICE = b"OggS\x00\x02" + bytes(range(256)) * 4  # an Ogg page header and some bytes
PHOTO = b"\xff\xd8\xff\xe0" + bytes(200)
TRANSCRIPT = "Hola, quiero cambiar la dirección de entrega de mi pedido"
ASK_ES = "Lo siento, no he podido escuchar tu mensaje de voz. ¿Podrías escribirme lo que necesitas?"
TOKEN_A = "EAAG-token-a"  # support.wa_binding


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    """Where kept media go (`WHATSAPP_MEDIA_ROOT`): a folder of the test's own."""
    settings.WHATSAPP_MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def usage_rows(tenant: Any, operation: str) -> list[UsageLog]:
    with tenant_scope(tenant):
        return list(UsageLog.objects.filter(operation=operation))


def inline_media(fake_google: FakeGoogle, index: int) -> tuple[str, bytes]:
    """The media part of the `index`th generateContent request: (mime type, bytes)."""
    part = fake_google.generate_requests[index]["contents"][0]["parts"][0]["inlineData"]
    return part["mime_type"], base64.urlsafe_b64decode(part["data"])


def sent_texts(fake_graph: FakeGraph) -> list[str]:
    return [b["text"]["body"] for b in fake_graph.sent]

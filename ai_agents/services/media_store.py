"""Customer media kept for staff (voice notes, images), only as long as the tenant says.

`HandoffSettings.media_retention_days` (default 0: nothing is kept). Files live under
`WHATSAPP_MEDIA_ROOT/<tenant id>/<message id>.<ext>`; the beat task `bulk_media_expire` deletes
each one once its message's `keep_until` has passed (or at once when the tenant's setting is 0),
and the message forgets it, so the inbox shows no player for a file that is gone.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ai_agents.models import Message
from erp.tenancy.scoping import tenant_scope

if TYPE_CHECKING:
    from ai_agents.channels.whatsapp.media import MediaFile

logger = logging.getLogger(__name__)

EXTENSIONS = {
    "audio/ogg": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp4": "m4a",
    "audio/aac": "aac",
    "audio/amr": "amr",
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
}


def _root() -> Path:
    return Path(settings.WHATSAPP_MEDIA_ROOT)


def media_keep(*, message: Message, media: MediaFile) -> str:
    """Writes the bytes; returns the file's name relative to the media root."""
    name = f"{message.tenant_id}/{message.pk}.{EXTENSIONS.get(media.base_type, 'bin')}"
    path = _root() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(media.data)
    return name


def media_path(message: Message) -> Path | None:
    """The kept file of a message, if it is still there."""
    name = str(((message.metadata or {}).get("media") or {}).get("file") or "")
    if not name or name != f"{message.tenant_id}/{Path(name).name}":
        return None
    path = _root() / name
    return path if path.is_file() else None


def media_expire() -> int:
    """Deletes every kept file whose time is up; returns how many."""
    root = _root()
    if not root.is_dir():
        return 0
    removed = 0
    now = timezone.now()
    for tenant_dir in root.iterdir():
        if not tenant_dir.is_dir() or not tenant_dir.name.isdigit():
            continue
        with tenant_scope(int(tenant_dir.name)):
            removed += _tenant_expire(tenant_dir, now=now)
    return removed


WRITE_GRACE = timedelta(minutes=10)


def _tenant_expire(tenant_dir: Path, *, now: datetime) -> int:
    removed = 0
    for path in tenant_dir.iterdir():
        # A file written moments ago may still be waiting for its message's `keep_until`
        # (saved once the model has read it): left for the next run.
        written = datetime.fromtimestamp(path.stat().st_mtime, tz=now.tzinfo)
        if now - written < WRITE_GRACE:
            continue
        message = Message.objects.filter(pk=path.stem).first() if _is_uuid(path.stem) else None
        facts = ((message.metadata or {}).get("media") or {}) if message is not None else {}
        until = parse_datetime(str(facts.get("keep_until") or ""))
        if until is not None and until > now:
            continue
        path.unlink(missing_ok=True)
        removed += 1
        if message is not None:
            metadata = {**message.metadata, "media": {**facts, "file": "", "expired": True}}
            Message.objects.filter(pk=message.pk).update(metadata=metadata)
    if removed:
        logger.info("whatsapp.media_expired", extra={"files": removed})
    return removed


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True

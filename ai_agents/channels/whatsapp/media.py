"""Fetching a WhatsApp media object: media id -> URL (Graph API lookup) -> bytes.

Both calls carry the binding's bearer token (the media belongs to that business). The URL is
short-lived, so it is downloaded at once. One attempt each: a failed lookup (>= 400) must not
be retried in a loop (Meta throttles that endpoint on errors). Size and type are checked on the
lookup's answer and again on the bytes (the size cap is enforced while streaming).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from django.conf import settings

from ai_agents.channels.whatsapp.graph import GraphClient
from erp.http.errors import HttpError, HttpResponseTooLarge

# What we read: voice notes and audio files, and images. Anything else is not fetched.
ALLOWED_MIME_TYPES = frozenset(
    {
        "audio/ogg",
        "audio/mpeg",
        "audio/mp4",
        "audio/aac",
        "audio/amr",
        "image/jpeg",
        "image/png",
        "image/webp",
    }
)
# Where Meta serves media from (the lookup's URL must point there, or at the Graph host).
MEDIA_HOST_SUFFIXES = (".fbsbx.com", ".facebook.com", ".whatsapp.net", ".fbcdn.net")
MEDIA_TIMEOUT = (3.05, 30.0)


class MediaError(Exception):
    """`code`: lookup_failed | too_large | type_not_allowed | download_failed."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


@dataclass(frozen=True)
class MediaFile:
    media_id: str
    data: bytes
    mime_type: str  # as Meta gave it ("audio/ogg; codecs=opus")

    @property
    def base_type(self) -> str:
        return base_mime(self.mime_type)


def base_mime(mime_type: str) -> str:
    return mime_type.split(";")[0].strip().lower()


def media_fetch(*, access_token: str, media_id: str, max_bytes: int | None = None) -> MediaFile:
    """The media's bytes, or `MediaError`. Holds no database connection (the caller's job)."""
    cap = max_bytes or settings.WHATSAPP_MEDIA_MAX_BYTES
    client = GraphClient(access_token=access_token)
    try:
        lookup = client.get(
            f"{client.base_url}/{quote(media_id, safe='')}",
            raise_for_status=False,
            timeout=MEDIA_TIMEOUT,
            max_bytes=64 * 1024,
        )
    except HttpError as exc:
        raise MediaError("lookup_failed", type(exc).__name__) from None
    try:
        info = lookup.json() if lookup.status < 400 else None
    except ValueError:
        info = None
    if not isinstance(info, dict) or not info.get("url"):
        raise MediaError("lookup_failed", f"HTTP {lookup.status}")
    mime_type = str(info.get("mime_type") or "")
    if base_mime(mime_type) not in ALLOWED_MIME_TYPES:
        raise MediaError("type_not_allowed", base_mime(mime_type))
    size = info.get("file_size")
    if isinstance(size, int) and size > cap:
        raise MediaError("too_large", str(size))
    url = str(info["url"])
    if not media_host_ok(url, client.base_url):
        raise MediaError("download_failed", "unexpected host")
    try:
        download = client.get(url, timeout=MEDIA_TIMEOUT, max_bytes=cap)
    except HttpResponseTooLarge:
        raise MediaError("too_large", f"> {cap}") from None
    except HttpError as exc:
        raise MediaError("download_failed", type(exc).__name__) from None
    return MediaFile(media_id=media_id, data=download.content, mime_type=mime_type)


def media_host_ok(url: str, graph_base: str) -> bool:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("https", "http") or not host:
        return False
    if host == (urlsplit(graph_base).hostname or "").lower():
        return True  # the Graph host itself (and the local fake)
    return parts.scheme == "https" and host.endswith(MEDIA_HOST_SUFFIXES)

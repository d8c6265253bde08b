"""Voice notes and images from WhatsApp, made readable before the agent answers.

Runs in the real-time task (`channel_conversation_answer`), never in the webhook: each customer
message of type audio or image not yet resolved is fetched with its conversation's binding token
(`ai_agents.channels.whatsapp.media`), transcribed or described through the LLM gateway (a usage
row with operation "transcription" or "image_description"), and its text replaced by the
transcript or description; the facts go to `metadata["media"]`. No database connection is held
while downloading or while the model works.

Audio that cannot be heard (fetch failed, model error, no model) is marked `ask_to_write`: the
engine answers it with a fixed request to write instead (`ASK_TO_WRITE`), without the model.
An image is described only when the agent's model sees images (`LLM_VISION_MODEL_PREFIXES`);
otherwise it is noted as received, with the customer's caption.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from ai_agents.channels.whatsapp.media import MediaError, MediaFile, media_fetch
from ai_agents.models import Agent, Conversation, Message
from ai_agents.services import media_store
from ai_agents.services.customer_notice import handoff_settings
from ai_agents.services.inbox_events import inbox_event_publish
from erp.db import connection_release
from erp.llm.errors import LlmError, NotConfigured
from erp.llm.gateway import CallContext, get_provider, llm_media_text
from erp.llm.language import customer_language
from erp.llm.models import Operation
from erp.llm.types import MediaRequest

logger = logging.getLogger(__name__)

MEDIA_KINDS = ("audio", "image")
# Another task resolving the same conversation's media is waited for this long at most (a
# fetch and a model call: MEDIA retry policy's 90 s); the lock expires on its own after TTL.
LOCK_WAIT_S, LOCK_TTL_S = 120.0, 150
# One run reads at most this many media messages, for at most this long: past either, a voice
# note gets the ask-to-write reply and an image the "[imagen recibida]" note (no paid call),
# so a flood of media neither runs up the bill nor holds a real-time thread for long.
MEDIA_PER_RUN, MEDIA_RUN_S = 10, 180.0
TRANSCRIBE_PROMPT = (
    "Transcribe this voice note verbatim, in its language. Answer with the transcript only."
)
DESCRIBE_PROMPT = (
    "Describe this image for a customer-service agent in the customer's language: what it "
    "shows and any readable text. Answer with the description only."
)


def conversation_media_resolve(*, conversation: Conversation) -> int:
    """Resolves the conversation's unanswered voice notes and images (oldest first); returns
    how many. Idempotent: a resolved message has `metadata["media"]`. One task at a time per
    conversation (two voice notes in a row start two tasks): the second waits for the first,
    then finds nothing left, so each note is fetched and transcribed once."""
    if not _pending(conversation).exists():  # the common case (text): no lock, no wait
        return 0
    key = f"wa-media:{conversation.pk}"
    token = uuid.uuid4().hex
    connection_release()  # nothing held while waiting
    held = _lock_take(key, token)
    try:
        return _pending_resolve(conversation, lock=key if held else "")
    finally:
        if held:
            _lock_give_back(key, token)


def _lock_take(key: str, token: str) -> bool:
    """Waits up to LOCK_WAIT_S for the conversation's media lock; False when another task
    still holds it then, or when the cache is down (resolving twice beats not answering)."""
    waited_until = time.monotonic() + LOCK_WAIT_S
    try:
        while not cache.add(key, token, LOCK_TTL_S):
            if time.monotonic() >= waited_until:
                return False
            time.sleep(0.1)
    except Exception:
        logger.warning("whatsapp.media_lock_unavailable", exc_info=True)
        return False
    return True


def _lock_give_back(key: str, token: str) -> None:
    """Deletes the lock only while it is still this task's (it may have expired and been taken
    by another task meanwhile)."""
    try:
        if cache.get(key) == token:
            cache.delete(key)
    except Exception:
        logger.warning("whatsapp.media_lock_unavailable", exc_info=True)


def _pending(conversation: Conversation) -> QuerySet[Message]:
    """Its voice notes and images not yet resolved nor answered (one being resolved by
    another task included: the caller then waits for that task's lock)."""
    return (
        Message.objects.filter(
            conversation_id=conversation.pk,
            role=Message.Role.USER,
            metadata__channel_metadata__type__in=MEDIA_KINDS,
        )
        .exclude(metadata__has_key="media")
        .exclude(metadata__has_key="result")
    )


def _pending_resolve(conversation: Conversation, *, lock: str) -> int:
    pending = list(_pending(conversation).order_by("created_at"))
    deadline = time.monotonic() + MEDIA_RUN_S
    for n, message in enumerate(pending):
        if n >= MEDIA_PER_RUN or time.monotonic() >= deadline:
            _skipped(message, conversation)
            continue
        if lock:
            cache.touch(lock, LOCK_TTL_S)  # each message gets the lock's whole time
        try:
            message_media_resolve(message=message, conversation=conversation)
        except Exception:  # a bug here must not keep the customer without an answer
            logger.exception("whatsapp.media_resolve_failed", extra={"message_id": str(message.pk)})
            facts = {**_facts_of(message), "error": "internal"}
            if facts["kind"] == "audio":
                facts.update(ask_to_write=True, language=(get_language() or "es")[:2])
            _save(message, text=message.content, facts=facts)
    return len(pending)


def _skipped(message: Message, conversation: Conversation) -> None:
    """Past the run's media budget: stored as not read, with no fetch and no model call."""
    facts = _facts_of(message)
    caption = _caption_of(message)
    text = _unread(message, "whatsapp.media_skipped", "too_many", facts=facts, caption=caption)
    if facts.get("ask_to_write"):
        facts["language"] = _language(conversation, before=message)
    _save(message, text=text, facts=facts)


def _facts_of(message: Message) -> dict[str, Any]:
    """The start of a message's `metadata["media"]`: what the webhook said about the file,
    nothing read yet."""
    channel = (message.metadata or {}).get("channel_metadata") or {}
    raw = channel.get("media") or {}
    return {
        "kind": str(channel.get("type") or ""),
        "media_id": str(raw.get("id") or ""),
        "mime_type": str(raw.get("mime_type") or ""),
        "duration_s": raw.get("duration"),  # Meta does not send it today
        "source": "none",
    }


def _caption_of(message: Message) -> str:
    channel = (message.metadata or {}).get("channel_metadata") or {}
    return str((channel.get("media") or {}).get("caption") or "").strip()


def message_media_resolve(*, message: Message, conversation: Conversation) -> dict[str, Any]:
    """Fetches, reads and stores one voice note or image; returns its `metadata["media"]`."""
    facts = _facts_of(message)
    kind = facts["kind"]
    caption = _caption_of(message)
    agent = conversation.agent
    provider = _provider(agent)
    days = _retention_days(conversation.tenant_id)
    text = message.content
    if kind == "image" and not _sees_images(agent, provider):
        text = _image_note(caption)
    elif kind == "audio" and provider.name == "offline":
        facts.update(ask_to_write=True, error="no_model")
    else:
        text = _read(message, conversation, facts=facts, caption=caption, days=days)
    if facts.get("ask_to_write"):
        facts["language"] = _language(conversation, before=message)
    _save(message, text=text, facts=facts)
    return facts


def _read(
    message: Message, conversation: Conversation, *, facts: dict[str, Any], caption: str, days: int
) -> str:
    """Fetch and model call, no connection held; the message's new text."""
    kind = facts["kind"]
    binding = conversation.binding
    token = binding.access_token if binding is not None else ""
    connection_release()
    try:
        media = media_fetch(access_token=token, media_id=facts["media_id"])
    except MediaError as exc:
        return _unread(
            message, "whatsapp.media_fetch_failed", exc.code, facts=facts, caption=caption
        )
    facts["mime_type"] = media.mime_type
    facts["size"] = len(media.data)
    if days > 0:
        try:
            facts["file"] = media_store.media_keep(message=message, media=media)
            facts["keep_until"] = (timezone.now() + timedelta(days=days)).isoformat()
        except OSError:  # the transcript matters more than the player
            logger.exception("whatsapp.media_keep_failed")
    try:
        result = _model_text(media, message=message, conversation=conversation, kind=kind)
    except LlmError as exc:
        return _unread(
            message, "whatsapp.media_read_failed", exc.code, facts=facts, caption=caption
        )
    facts["model"] = result.model
    if kind == "audio":
        facts["source"] = "transcription"
        return result.text
    facts["source"] = "description"
    described = _("[Imagen del cliente: %(description)s]") % {"description": result.text}
    return f"{caption}\n{described}" if caption else described


def _unread(message: Message, event: str, code: str, *, facts: dict[str, Any], caption: str) -> str:
    """The message's text when its media could not be read (logged as `event`): a voice
    note keeps its content and the customer is asked to write; an image gets its note."""
    logger.info(event, extra={"error": code, "kind": facts["kind"]})
    facts["error"] = code
    if facts["kind"] == "audio":
        facts["ask_to_write"] = True
        return message.content
    return _image_note(caption)


def _model_text(
    media: MediaFile, *, message: Message, conversation: Conversation, kind: str
) -> Any:
    agent = conversation.agent
    audio = kind == "audio"
    request = MediaRequest(
        data=media.data,
        mime_type=media.base_type,
        task="transcribe" if audio else "describe",
        prompt=TRANSCRIBE_PROMPT if audio else DESCRIBE_PROMPT,
        model=(settings.LLM_TRANSCRIPTION_MODEL or None) if audio else (agent.model or None),
    )
    operation = Operation.TRANSCRIPTION if audio else Operation.IMAGE_DESCRIPTION
    context = CallContext(
        tenant=agent.tenant,
        operation=operation.value,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        message_id=message.pk,
    )
    return llm_media_text(request, context=context, provider=_provider(agent))


def _provider(agent: Agent) -> Any:
    """The agent's provider; the offline one when its provider lacks settings (no model)."""
    try:
        return get_provider(None if agent.provider == Agent.Provider.DEFAULT else agent.provider)
    except NotConfigured:
        return get_provider("offline")


def _sees_images(agent: Agent, provider: Any) -> bool:
    if provider.name == "offline":
        return False
    model = agent.model or getattr(provider, "default_model", "") or ""
    return model.startswith(tuple(settings.LLM_VISION_MODEL_PREFIXES))


def _image_note(caption: str) -> str:
    note = _("[imagen recibida]")
    return f"{note} {caption}" if caption else note


def _retention_days(tenant_id: Any) -> int:
    found = handoff_settings(tenant_id)
    return int(found.media_retention_days) if found is not None else 0


def _language(conversation: Conversation, *, before: Message) -> str:
    earlier = (
        Message.objects.filter(
            conversation_id=conversation.pk,
            role=Message.Role.USER,
            created_at__lt=before.created_at,
        )
        .exclude(metadata__has_key="media")
        .order_by("-created_at")
        .values_list("content", flat=True)[:5]
    )
    return customer_language(list(earlier), default=(get_language() or "es")[:2])


def _save(message: Message, *, text: str, facts: dict[str, Any]) -> None:
    metadata = {**(message.metadata or {}), "media": facts}
    Message.objects.filter(pk=message.pk).update(content=text, metadata=metadata)
    message.content, message.metadata = text, metadata
    inbox_event_publish(
        tenant_id=message.tenant_id, conversation_id=message.conversation_id, kind="message"
    )

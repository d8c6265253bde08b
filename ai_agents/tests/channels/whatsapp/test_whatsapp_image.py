"""Images over the reference payload, through the real webhook and the real-time task: when
the media cannot be fetched (lookup 404, download error) or the model fails to describe it,
the message is noted as received ("[imagen recibida]" and its caption) and answered, and staff
see it so in the inbox; an image is kept for the tenant's retention days, then deleted."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import HandoffSettings, Message
from ai_agents.tests.channels.whatsapp.media_support import (
    IMAGE_ID,
    PHOTO,
    TOKEN_A,
    sent_texts,
    usage_rows,
)
from ai_agents.tests.channels.whatsapp.support import Line, payload, respond, user_messages
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import DOWNLOAD_ROUTE, FakeGraph
from erp.testing.fake_http import FakeResponse
from erp.testing.fixtures import Persona

NOTED = "[imagen recibida] This is the part that broke"  # the payload's caption


@pytest.fixture
def broken_download(fake_graph: FakeGraph) -> Iterator[None]:
    """The download URL answers 500 (the lookup still works); the shared fake is restored."""
    fake_graph.server.route("GET", DOWNLOAD_ROUTE, FakeResponse(status=500, body=b"oops"))
    try:
        yield
    finally:
        fake_graph.server.route("GET", DOWNLOAD_ROUTE, fake_graph._media_download)


def _inbox(owner: Persona, conversation_id: Any) -> str:
    staff = Client()
    staff.force_login(owner.user)
    return staff.get(f"/inbox/{conversation_id}").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("case", "expected_error"),
    [
        ("lookup_404", "lookup_failed"),
        ("download_error", "download_failed"),
        ("model_error", "llm_bad_request"),
    ],
)
def test_an_image_that_cannot_be_read_is_noted_as_received_and_answered(
    case: str, expected_error: str, line: Line, owner: Persona, request: Any
) -> None:
    if case != "lookup_404":
        line.graph.media_put(IMAGE_ID, PHOTO, "image/jpeg", token=TOKEN_A)
    if case == "download_error":
        request.getfixturevalue("broken_download")
    if case == "model_error":
        line.google.push(line.google.error(400, "Unsupported image"))
    respond(line.google, "¿Qué pieza se rompió?")

    line.customer_sends(payload("image"))

    # the customer's message is kept, as received, and answered by the model
    [message] = user_messages(line.tenant)
    assert message.content == NOTED
    facts = message.metadata["media"]
    assert (facts["kind"], facts["source"], facts["error"]) == ("image", "none", expected_error)
    assert "ask_to_write" not in facts and not facts.get("file")
    assert sent_texts(line.graph) == ["¿Qué pieza se rompió?"]
    assert message.metadata["result"]["reply"]["text"] == "¿Qué pieza se rompió?"
    assert NOTED in str(line.google.generate_requests[-1]["contents"])
    failed = [r.success for r in usage_rows(line.tenant, "image_description")]
    assert failed == ([False] if case == "model_error" else [])
    # staff see the note and "Imagen recibida", no link to a file
    html = _inbox(owner, message.conversation_id)
    assert NOTED in html and "Imagen recibida" in html and "Ver la imagen" not in html


@pytest.mark.django_db
def test_an_image_is_kept_for_the_tenants_retention_days_then_deleted(
    line: Line, media_root: Path, owner: Persona
) -> None:
    from ai_agents.tasks import bulk_media_expire

    HandoffSettings.objects.for_tenant(line.tenant).update_or_create(
        tenant=line.tenant, defaults={"media_retention_days": 7}
    )
    line.graph.media_put(IMAGE_ID, PHOTO, "image/jpeg", token=TOKEN_A)
    line.google.push(line.google.reply("Una bisagra partida."))
    respond(line.google, "Le enviamos una pieza nueva.")
    line.customer_sends(payload("image"))
    [message] = user_messages(line.tenant)
    kept = media_root / message.metadata["media"]["file"]
    assert kept.read_bytes() == PHOTO
    assert "Ver la imagen" in _inbox(owner, message.conversation_id)

    assert bulk_media_expire() == 0  # within its 7 days
    assert kept.exists()

    with tenant_scope(line.tenant):
        metadata = message.metadata
        metadata["media"]["keep_until"] = "2020-01-01T00:00:00+00:00"
        Message.objects.filter(pk=message.pk).update(metadata=metadata)
    an_hour_ago = time.time() - 3600
    os.utime(kept, (an_hour_ago, an_hour_ago))
    assert bulk_media_expire() == 1
    assert not kept.exists()
    [message] = user_messages(line.tenant)
    assert message.metadata["media"]["file"] == ""
    assert "Una bisagra partida." in message.content  # the description stays
    html = _inbox(owner, message.conversation_id)
    assert "Imagen, descrita" in html and "Ver la imagen" not in html

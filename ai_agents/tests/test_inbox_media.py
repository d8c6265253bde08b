"""Voice notes in the staff inbox: the transcript is the message, a player beside it while the
tenant keeps the audio, the file only to members of its tenant (a member of two tenants gets
each only under its own conversation), in Spanish and English, accessible at 390x844."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import Conversation, HandoffSettings, Message
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.tenancy.scoping import tenant_scope
from erp.testing.accessibility import axe_check
from erp.testing.browser import admin_login, context_new
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

VOICE = b"OggS\x00\x02" + bytes(64)
TRANSCRIPT = "Quiero cambiar la dirección de entrega"


def _voice_note(conversation: Conversation, root: Path, *, kept: bool = True) -> Message:
    """A customer's voice note as the pipeline leaves it (transcribed; the file kept or not)."""
    with tenant_scope(conversation.tenant_id):
        message = Message.objects.create(
            tenant_id=conversation.tenant_id,
            conversation=conversation,
            agent=conversation.agent,
            role="user",
            content=TRANSCRIPT,
            created_at=timezone.now(),
        )
        name = f"{conversation.tenant_id}/{message.pk}.ogg" if kept else ""
        message.metadata = {
            "channel_metadata": {"type": "audio"},
            "media": {"kind": "audio", "source": "transcription", "file": name},
        }
        message.save(update_fields=["metadata"])
    if kept:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(VOICE)
    return message


def _client(persona: Persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


@pytest.mark.django_db
def test_the_transcript_shows_with_a_player_and_the_audio_only_to_its_tenant(
    owner: Persona, outsider: Persona, media_root: Path
) -> None:
    ours = conversation_make(agent_for(owner.tenant), thread="ana")
    theirs = conversation_make(agent_for(outsider.tenant), thread="bob")
    mine = _voice_note(ours, media_root)
    other = _voice_note(theirs, media_root)
    url = f"/inbox/{ours.pk}/media/{mine.pk}"

    html = _client(owner).get(f"/inbox/{ours.pk}").content.decode()
    assert TRANSCRIPT in html
    assert "Nota de voz, transcrita" in html
    assert f'src="{url}"' in html
    response = _client(owner).get(url)
    assert response.status_code == 200
    assert response.content == VOICE
    assert response["Content-Type"] == "audio/ogg"

    # The outsider: 404 for the other tenant's file, and for theirs under our conversation.
    assert _client(outsider).get(url).status_code == 404
    assert _client(outsider).get(f"/inbox/{ours.pk}/media/{other.pk}").status_code == 404
    # A member of both tenants gets each file only under its own conversation.
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.AGENT)
    both = _client(outsider)
    assert both.get(url).status_code == 200
    assert both.get(f"/inbox/{theirs.pk}/media/{other.pk}").status_code == 200
    assert both.get(f"/inbox/{theirs.pk}/media/{mine.pk}").status_code == 404
    assert (media_root / mine.metadata["media"]["file"]).read_bytes() == VOICE  # untouched


@pytest.mark.django_db
def test_without_a_kept_file_there_is_no_player_and_the_url_is_404(
    owner: Persona, media_root: Path
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), thread="ana")
    message = _voice_note(conversation, media_root, kept=False)

    html = _client(owner).get(f"/inbox/{conversation.pk}").content.decode()

    assert TRANSCRIPT in html and "Nota de voz, transcrita" in html
    assert "<audio" not in html
    assert _client(owner).get(f"/inbox/{conversation.pk}/media/{message.pk}").status_code == 404


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("locale", "label"),
    [("es-ES", "Nota de voz, transcrita"), ("en-US", "Voice note, transcribed")],
)
def test_the_player_in_the_browser_is_accessible_on_a_phone(
    browser: Any,
    asgi_server: str,
    owner: Persona,
    media_root: Path,
    locale: str,
    label: str,
) -> None:
    from playwright.sync_api import expect

    conversation = conversation_make(agent_for(owner.tenant), thread="ana")
    _voice_note(conversation, media_root)
    context = context_new(
        browser, base_url=asgi_server, locale=locale, viewport={"width": 390, "height": 844}
    )
    try:
        page = context.new_page()
        admin_login(page, owner, f"/inbox/{conversation.pk}")
        note = page.locator('#inbox-messages [data-media-kind="audio"]')
        expect(note).to_contain_text(label)
        player = note.locator("audio")
        expect(player).to_be_visible()
        box = player.bounding_box()
        assert box is not None and box["height"] >= 44 and box["width"] <= 390
        assert axe_check(page) == []
    finally:
        context.close()


@pytest.mark.django_db
def test_the_retention_setting_in_the_admin_defaults_to_not_kept_and_is_bounded(
    owner: Persona,
) -> None:
    client = _client(owner)
    base = {"notify_emails": "", "claim_lease_minutes": "15", "renotify_minutes": "30"}
    assert client.post("/admin/ai_agents/handoffsettings/add/", base).status_code == 302
    row = HandoffSettings.objects.for_tenant(owner.tenant).get()
    assert row.media_retention_days == 0  # not kept unless the tenant says so

    change_url = f"/admin/ai_agents/handoffsettings/{row.pk}/change/"
    form = client.get(change_url).content.decode().lower()
    assert "días que se guardan audios e imágenes" in form
    assert client.post(change_url, {**base, "media_retention_days": "400"}).status_code == 200
    row.refresh_from_db()
    assert row.media_retention_days == 0
    assert client.post(change_url, {**base, "media_retention_days": "30"}).status_code == 302
    row.refresh_from_db()
    assert row.media_retention_days == 30

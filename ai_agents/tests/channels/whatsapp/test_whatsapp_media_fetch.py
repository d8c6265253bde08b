"""Fetching WhatsApp media through the fake Graph API: the reference lookup answer, the size
checked before and while downloading, Meta's download host only, the MIME allow-list."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.channels.whatsapp.media import MediaError, media_fetch, media_host_ok
from ai_agents.tests.channels.whatsapp.media_support import (
    AUDIO_ID,
    IMAGE_ID,
    PHOTO,
    TOKEN_A,
    VOICE,
)
from ai_agents.tests.channels.whatsapp.support import payload
from erp.testing.fake_graph import FakeGraph


@pytest.mark.django_db
def test_the_reference_lookup_answer_is_read_and_its_size_checked_before_downloading(
    wa_binding: Any, fake_graph: FakeGraph, settings: Any
) -> None:
    reference = payload("media_url_lookup_response")  # image/jpeg, 303,833 bytes
    photo = PHOTO + bytes(reference["file_size"] - len(PHOTO))
    fake_graph.media_put(IMAGE_ID, photo, "image/jpeg", token=TOKEN_A, lookup=reference)
    # Meta's download host is accepted; a URL elsewhere (say, cloud metadata) never is.
    assert media_host_ok(reference["url"], "https://graph.facebook.com/v24.0")
    assert not media_host_ok("http://169.254.169.254/latest", "https://graph.facebook.com/v24.0")

    got = media_fetch(access_token=TOKEN_A, media_id=IMAGE_ID)
    assert (got.mime_type, len(got.data)) == ("image/jpeg", 303833)

    fake_graph.reset()
    fake_graph.media_put(IMAGE_ID, photo, "image/jpeg", token=TOKEN_A, lookup=reference)
    settings.WHATSAPP_MEDIA_MAX_BYTES = 300_000
    with pytest.raises(MediaError) as refused:
        media_fetch(access_token=TOKEN_A, media_id=IMAGE_ID)
    assert refused.value.code == "too_large"
    assert [r.path for r in fake_graph.media_requests] == [f"/v24.0/{IMAGE_ID}"]  # no download


@pytest.mark.django_db
def test_a_type_outside_the_allow_list_is_not_downloaded(
    wa_binding: Any, fake_graph: FakeGraph
) -> None:
    fake_graph.media_put(IMAGE_ID, b"MZ\x90\x00", "application/x-msdownload", token=TOKEN_A)

    with pytest.raises(MediaError) as refused:
        media_fetch(access_token=TOKEN_A, media_id=IMAGE_ID)

    assert refused.value.code == "type_not_allowed"
    assert [r.path for r in fake_graph.media_requests] == [f"/v24.0/{IMAGE_ID}"]


@pytest.mark.django_db
def test_a_download_larger_than_its_lookup_said_is_cut_at_the_limit(
    wa_binding: Any, fake_graph: FakeGraph, settings: Any
) -> None:
    understated = {"mime_type": "audio/ogg; codecs=opus", "file_size": 10, "id": AUDIO_ID}
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg", token=TOKEN_A, lookup=understated)
    settings.WHATSAPP_MEDIA_MAX_BYTES = 100  # VOICE is 1,030 bytes

    with pytest.raises(MediaError) as refused:
        media_fetch(access_token=TOKEN_A, media_id=AUDIO_ID)

    assert refused.value.code == "too_large"

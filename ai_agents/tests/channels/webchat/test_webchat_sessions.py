"""The web chat's visitor API as a browser uses it: a signed visitor session, history that
survives a reload, replies streamed over SSE, a person's replies and the "a person is
answering" state, limits, and two tenants kept apart."""

from __future__ import annotations

import json
import time

import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from django.test import AsyncClient

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.handoff import conversation_claim, conversation_reply
from ai_agents.tests.channels.webchat.support import ORIGIN, Visitor, respond, sse_events
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

# --- sessions -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_session_gives_a_token_texts_and_state(binding: ChannelBinding) -> None:
    visitor = Visitor(binding)
    response = visitor.start(lang="en-GB")
    assert response.status_code == 200
    data = response.json()
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert data["lang"] == "en"
    assert data["agent"] == {"name": "Lucía"}
    assert data["state"] == "bot" and data["human"] is False
    assert data["max_chars"] == 4000
    assert {"greeting", "send", "state_human", "input_label"} <= set(data["texts"])
    assert Visitor(binding).start(lang="fr").json()["lang"] == "es"
    # history empty, and the token works
    history = visitor.history()
    assert history.status_code == 200
    assert history.json()["messages"] == []


@pytest.mark.django_db
def test_forged_expired_missing_or_foreign_tokens_get_401(
    binding: ChannelBinding, binding_b: ChannelBinding
) -> None:
    visitor = Visitor(binding)
    visitor.start()

    class OldSigner(signing.TimestampSigner):
        def timestamp(self) -> str:
            return signing.b62_encode(int(time.time()) - webchat.SESSION_MAX_AGE_S - 60)

    expired = OldSigner(salt=webchat.SESSION_SALT).sign_object(
        {"b": str(binding.pk), "v": "someone"}
    )
    forged = visitor.token[:-3] + ("AAA" if not visitor.token.endswith("AAA") else "BBB")
    wrong_salt = signing.TimestampSigner(salt="other").sign_object({"b": str(binding.pk), "v": "x"})
    for token in ("", forged, expired, wrong_salt, "x" * 600):
        response = visitor.history(token=token)
        assert response.status_code == 401, token
        assert response.json()["error"]["code"] == "session_invalid"
        assert response["Access-Control-Allow-Origin"] == ORIGIN  # the widget can read it

    # tenant A's token on tenant B's key (from B's own origin)
    other = Visitor(binding_b, origin="https://globex.example")
    assert other.history(token=visitor.token).status_code == 401


# --- messages, history, reload ------------------------------------------------------------


@pytest.mark.django_db
def test_a_message_gets_the_bot_reply_and_history_survives_a_reload(
    binding: ChannelBinding, fake_google: FakeGoogle
) -> None:
    visitor = Visitor(binding)
    visitor.start()
    respond(fake_google, "Abrimos a las 8.")
    response = visitor.say("¿A qué hora abren?", client_message_id="c1")
    assert response.status_code == 200
    body = response.json()
    assert body["reply"]["text"] == "Abrimos a las 8."
    assert body["state"] == "bot"
    assert "usage" not in body and "escalation" not in body  # nothing internal for visitors

    # the page reloads: the stored token resumes the same visitor
    reloaded = Visitor(binding)
    reloaded.token = visitor.token
    assert reloaded.start().status_code == 200
    history = reloaded.history().json()
    assert [(m["role"], m["text"], m["human"]) for m in history["messages"]] == [
        ("user", "¿A qué hora abren?", False),
        ("assistant", "Abrimos a las 8.", False),
    ]
    assert history["messages"][1]["id"] == body["reply"]["id"]
    assert reloaded.history(after=history["cursor"]).json()["messages"] == []

    # a retried POST (same client id) is not answered twice
    again = visitor.say("¿A qué hora abren?", client_message_id="c1")
    assert again.json()["reply"]["id"] == body["reply"]["id"]
    assert len(fake_google.generate_requests) == 1

    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    assert conversation.channel == "webchat"
    assert conversation.binding_id == binding.pk
    assert conversation.agent_id == binding.agent_id

    # another visitor starts empty
    stranger = Visitor(binding)
    stranger.start()
    assert stranger.history().json()["messages"] == []


@pytest.mark.django_db
def test_a_person_answering_is_shown_and_the_bot_stays_silent(
    binding: ChannelBinding, owner: Persona, fake_google: FakeGoogle
) -> None:
    visitor = Visitor(binding)
    visitor.start()
    respond(fake_google, "Hola, ¿en qué le ayudo?")
    visitor.say("hola")
    cursor = visitor.history().json()["cursor"]

    # the staff inbox claims the conversation and replies (as the inbox stores it)
    owner.user.first_name = "Ana"
    owner.user.save()
    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    conversation = conversation_claim(conversation, owner.user)
    conversation_reply(conversation, owner.user, "Soy Ana, le ayudo yo.")
    polled = visitor.history(after=cursor).json()
    assert polled["state"] == "human" and polled["human"] is True
    assert [(m["text"], m["human"], m["author_name"], m["notice"]) for m in polled["messages"]] == [
        ("Una persona del equipo le atiende a partir de ahora.", False, "", "claim"),
        ("Soy Ana, le ayudo yo.", True, "Ana", ""),
    ]
    assert owner.user.username not in json.dumps(polled)  # never the staff e-mail

    calls = len(fake_google.generate_requests)
    response = visitor.say("Gracias, Ana")
    body = response.json()
    assert response.status_code == 200
    assert body["reply"] is None and body["state"] == "human"
    assert len(fake_google.generate_requests) == calls  # no model call
    texts = [m["text"] for m in visitor.history().json()["messages"]]
    assert texts[-2:] == ["Soy Ana, le ayudo yo.", "Gracias, Ana"]

    # escalated, nobody holds it yet: "waiting"
    Conversation.objects.for_tenant(binding.tenant).filter(pk=conversation.pk).update(
        assigned_to=None
    )
    assert visitor.history().json()["state"] == "waiting"


@pytest.mark.django_db
def test_asking_for_a_person_escalates_and_the_visitor_waits_for_one(
    binding: ChannelBinding, fake_google: FakeGoogle
) -> None:
    visitor = Visitor(binding)
    visitor.start()
    body = visitor.say("quiero hablar con un humano").json()
    assert body["reply"]["text"] == binding.agent.escalation_message
    assert body["state"] == "waiting" and body["human"] is False
    assert visitor.history().json()["state"] == "waiting"
    assert visitor.start().json()["state"] == "waiting"  # after a reload too

    later = visitor.say("¿hay alguien?").json()
    assert later["reply"] is None and later["state"] == "waiting"
    assert fake_google.generate_requests == []
    assert [m["role"] for m in visitor.history().json()["messages"]] == [
        "user",
        "assistant",
        "user",
    ]


@pytest.mark.django_db
def test_two_tenants_never_see_each_others_conversations(
    binding: ChannelBinding, binding_b: ChannelBinding, fake_google: FakeGoogle
) -> None:
    a = Visitor(binding)
    a.start()
    respond(fake_google, "Respuesta de Acme.")
    a.say("secreto de Acme")

    b = Visitor(binding_b, origin="https://globex.example")
    b.start()
    assert b.history().json()["messages"] == []
    # A's session on B's binding: refused; B's origin on A's binding: refused
    assert b.history(token=a.token).status_code == 401
    assert Visitor(binding, origin="https://globex.example").start().status_code == 403
    # a session token resumed on another binding starts a new visitor there
    b.token = a.token
    assert b.start().status_code == 200
    assert b.token != a.token
    assert b.history().json()["messages"] == []
    assert Conversation.objects.for_tenant(binding_b.tenant).count() == 0


# --- validation and limits ----------------------------------------------------------------


@pytest.mark.django_db
def test_text_validation(binding: ChannelBinding) -> None:
    visitor = Visitor(binding)
    visitor.start()
    too_long = visitor.say("a" * 4001)
    assert too_long.status_code == 400
    assert too_long.json()["error"]["code"] == "text_too_long"
    assert visitor.say("   ").json()["error"]["code"] == "text_required"
    bad = visitor.client.post(
        f"/api/webchat/{binding.token}/messages",
        "not json",
        content_type="application/json",
        HTTP_X_WEBCHAT_TOKEN=visitor.token,
    )
    assert bad.status_code == 400
    assert visitor.history(after="yesterday").status_code == 400
    assert Message.objects.unscoped().count() == 0


@pytest.mark.django_db
def test_per_visitor_and_per_ip_limits_answer_429_with_retry_after(
    binding: ChannelBinding, fake_google: FakeGoogle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webchat, "VISITOR_MESSAGES", (2, 60))
    monkeypatch.setattr(webchat, "IP_MESSAGES", (3, 60))
    monkeypatch.setattr(webchat, "IP_SESSIONS", (3, 600))
    first = Visitor(binding)
    first.start()
    assert first.say("uno").status_code == 200
    assert first.say("dos").status_code == 200
    limited = first.say("tres")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert "Retry-After" in limited["Access-Control-Expose-Headers"]

    second = Visitor(binding)  # same address, another visitor
    second.start()
    assert second.say("cuatro").status_code == 200  # third message from this IP
    assert second.say("cinco").status_code == 429  # the IP's limit
    stored = Message.objects.unscoped().filter(role="user").count()
    assert stored == 3

    third = Visitor(binding)
    assert third.start().status_code == 200  # third new session from this IP
    assert Visitor(binding).start().status_code == 429
    # a returning visitor is not a new session
    assert first.start().status_code == 200


# --- streaming ----------------------------------------------------------------------------

ANSWER = "Abrimos de lunes a viernes de 8:00 a 20:00 y los sábados por la mañana."


@pytest.mark.django_db(transaction=True)
def test_the_reply_streams_before_the_model_finishes(
    binding: ChannelBinding, fake_google: FakeGoogle
) -> None:
    visitor = Visitor(binding)
    visitor.start()
    respond(fake_google, ANSWER, chunks=4, chunk_delay=0.25)
    arrivals: list[tuple[float, str]] = []

    async def consume() -> None:
        response = await AsyncClient().post(
            f"/api/webchat/{binding.token}/messages",
            {"text": "¿Horario?"},
            content_type="application/json",
            headers={
                "origin": ORIGIN,
                "x-webchat-token": visitor.token,
                "accept": "text/event-stream",
            },
        )
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/event-stream")
        assert response["Access-Control-Allow-Origin"] == ORIGIN
        async for chunk in response.streaming_content:  # type: ignore[attr-defined]  # an SSE stream
            text = chunk.decode() if isinstance(chunk, bytes) else chunk
            arrivals.append((time.monotonic(), text))

    async_to_sync(consume)()
    events = sse_events("".join(text for _t, text in arrivals))
    names = [name for name, _d in events]
    assert names[0] == "token" and names[-2:] == ["citations", "done"]
    assert "".join(d["text"] for n, d in events if n == "token") == ANSWER
    done = events[-1][1]
    assert done["reply"]["text"] == ANSWER and done["state"] == "bot"
    assert "usage" not in done
    first_token_at = next(t for t, text in arrivals if "event: token" in text)
    assert first_token_at < fake_google.stream_sent_at[-1]
    history = visitor.history().json()["messages"]
    assert [m["text"] for m in history] == ["¿Horario?", ANSWER]

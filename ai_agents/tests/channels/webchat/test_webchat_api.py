"""The web chat's public API as a visitor's browser uses it: only the binding's origins, a
signed visitor session, history that survives a reload, replies streamed over SSE, a person's
replies and the "a person is answering" state, limits, and two tenants kept apart."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from django.core.cache import cache
from django.test import AsyncClient, Client

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.agents import agent_create
from ai_agents.services.handoff import conversation_claim, conversation_reply
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

ORIGIN = "https://shop.example"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


@pytest.fixture(autouse=True)
def _clean_limits() -> Iterator[None]:
    cache.clear()  # per-IP counters: every test comes from 127.0.0.1
    yield
    cache.clear()


def _binding(tenant: Tenant, name: str, origins: list[str]) -> ChannelBinding:
    agent = agent_create(
        tenant=tenant,
        data={"name": name, "system_prompt": f"Eres {name}.", "processing_config": FAST},
    )
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant, agent=agent, type=ChannelBinding.Type.WEBCHAT, allowed_origins=origins
    )


@pytest.fixture
def binding(tenant_a: Tenant) -> ChannelBinding:
    return _binding(tenant_a, "Lucía", [ORIGIN, "https://*.acme.example"])


@pytest.fixture
def binding_b(tenant_b: Tenant) -> ChannelBinding:
    return _binding(tenant_b, "Globo", ["https://globex.example"])


class Visitor:
    """A browser on `origin` talking to one binding."""

    def __init__(self, binding: ChannelBinding, origin: str = ORIGIN) -> None:
        self.key = binding.token
        self.origin = origin
        self.client = Client(HTTP_ORIGIN=origin)
        self.token = ""

    def start(self, **body: Any) -> Any:
        response = self.client.post(
            f"/api/webchat/{self.key}/sessions",
            json.dumps({"token": self.token, **body}),
            content_type="application/json",
        )
        if response.status_code == 200:
            self.token = response.json()["token"]
        return response

    def history(self, after: str | None = None, token: str | None = None) -> Any:
        query = {"after": after} if after else {}
        return self.client.get(
            f"/api/webchat/{self.key}/messages",
            query,
            HTTP_X_WEBCHAT_TOKEN=self.token if token is None else token,
        )

    def say(self, text: str, **extra: Any) -> Any:
        return self.client.post(
            f"/api/webchat/{self.key}/messages",
            json.dumps({"text": text, **extra}),
            content_type="application/json",
            HTTP_X_WEBCHAT_TOKEN=self.token,
        )


def _respond(fake: FakeGoogle, text: str, **kw: Any) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text, "confidence": 0.9}, **kw))


def _events(raw: str) -> list[tuple[str, Any]]:
    events = []
    for block in raw.split("\n\n"):
        if block.strip():
            lines = dict(line.split(": ", 1) for line in block.splitlines())
            events.append((lines["event"], json.loads(lines["data"])))
    return events


# --- /widget.js ---------------------------------------------------------------------------


def test_widget_script_is_served_small_cacheable_and_without_eval(client: Client) -> None:
    response = client.get("/widget.js")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert "max-age=86400" in response["Cache-Control"]
    body = response.content.decode()
    assert len(response.content) < 20_000
    assert "Content-Encoding" not in response  # this client did not ask for gzip
    assert "eval(" not in body and "new Function" not in body and "innerHTML" not in body
    assert "adoptedStyleSheets" in body and 'role: "dialog"' in body
    again = client.get("/widget.js", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304

    # What browsers download: gzip, under 7 KB, the same script once decoded.
    zipped = client.get("/widget.js", HTTP_ACCEPT_ENCODING="br, gzip, deflate")
    assert zipped["Content-Encoding"] == "gzip" and "Accept-Encoding" in zipped["Vary"]
    assert len(zipped.content) < 7_000
    assert gzip.decompress(zipped.content).decode() == body
    assert zipped["ETag"] != response["ETag"]
    assert client.get("/widget.js", HTTP_IF_NONE_MATCH=zipped["ETag"]).status_code == 200
    refused = client.get("/widget.js", HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
    assert "Content-Encoding" not in refused and refused.content == response.content


# --- origins and CORS ---------------------------------------------------------------------


@pytest.mark.django_db
def test_preflight_and_responses_echo_only_allowed_origins(binding: ChannelBinding) -> None:
    client = Client()
    url = f"/api/webchat/{binding.token}/messages"
    ok = client.options(
        url, HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_HEADERS="x-webchat-token"
    )
    assert ok.status_code == 204
    assert ok["Access-Control-Allow-Origin"] == ORIGIN
    assert "X-Webchat-Token" in ok["Access-Control-Allow-Headers"]
    assert "Origin" in ok["Vary"]
    assert "Access-Control-Allow-Credentials" not in ok

    sub = client.options(url, HTTP_ORIGIN="https://www.acme.example")
    assert sub["Access-Control-Allow-Origin"] == "https://www.acme.example"

    for bad in ("https://evil.example", "http://shop.example", "https://shop.example.evil.test"):
        denied = client.options(url, HTTP_ORIGIN=bad)
        assert denied.status_code == 403
        assert denied.json()["error"]["code"] == "origin_not_allowed"
        assert "Access-Control-Allow-Origin" not in denied
        started = Visitor(binding, origin=bad).start()
        assert started.status_code == 403
    assert Conversation.objects.unscoped().count() == 0

    missing = Client().options("/api/webchat/no-such-key/messages", HTTP_ORIGIN=ORIGIN)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_an_inactive_binding_is_not_found(binding: ChannelBinding) -> None:
    ChannelBinding.objects.unscoped().filter(pk=binding.pk).update(is_active=False)
    assert Visitor(binding).start().status_code == 404


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
    _respond(fake_google, "Abrimos a las 8.")
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
    _respond(fake_google, "Hola, ¿en qué le ayudo?")
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
    assert [(m["text"], m["human"], m["author_name"]) for m in polled["messages"]] == [
        ("Soy Ana, le ayudo yo.", True, "Ana")
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
    _respond(fake_google, "Respuesta de Acme.")
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
    _respond(fake_google, ANSWER, chunks=4, chunk_delay=0.25)
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
    events = _events("".join(text for _t, text in arrivals))
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


# --- demo page ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_demo_page_is_for_the_tenants_staff_with_a_strict_csp(
    binding: ChannelBinding, owner: Persona, outsider: Persona
) -> None:
    anonymous = Client().get(f"/webchat/demo?key={binding.token}")
    assert anonymous.status_code == 302

    staff = Client()
    staff.force_login(owner.user)
    page = staff.get(f"/webchat/demo?key={binding.token}")
    assert page.status_code == 200
    assert "script-src 'self'" in page["Content-Security-Policy"]
    assert "'unsafe-inline'" not in page["Content-Security-Policy"]
    html = page.content.decode()
    assert f'<script src="/widget.js" data-key="{binding.token}"' in html
    assert "<style" not in html and "style=" not in html

    other = Client()
    other.force_login(outsider.user)
    assert other.get(f"/webchat/demo?key={binding.token}").status_code == 404


@pytest.mark.django_db
def test_behind_a_proxy_the_ip_limit_counts_each_visitors_own_address(
    binding: ChannelBinding, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.TRUSTED_PROXY_HOPS = 1
    monkeypatch.setattr(webchat, "IP_SESSIONS", (1, 600))

    def visitor_from(address: str, spoofed: str = "") -> Visitor:
        visitor = Visitor(binding)
        forwarded = f"{spoofed}, {address}" if spoofed else address
        visitor.client.defaults["HTTP_X_FORWARDED_FOR"] = forwarded
        return visitor

    # Every request comes from the proxy (REMOTE_ADDR 127.0.0.1): the limit follows the
    # address the proxy saw, not the proxy's.
    assert visitor_from("203.0.113.7").start().status_code == 200
    assert visitor_from("198.51.100.9").start().status_code == 200
    assert visitor_from("203.0.113.7").start().status_code == 429
    # What the client itself put in front of the header is not trusted.
    assert visitor_from("203.0.113.7", spoofed="192.0.2.1").start().status_code == 429


def test_client_ip_reads_only_the_trusted_hops(settings: Any) -> None:
    from django.test import RequestFactory

    from erp.http_request import client_ip

    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.7, 10.0.0.1"
    )
    settings.TRUSTED_PROXY_HOPS = 0
    assert client_ip(request) == "10.0.0.2"
    settings.TRUSTED_PROXY_HOPS = 1
    assert client_ip(request) == "10.0.0.1"
    settings.TRUSTED_PROXY_HOPS = 2
    assert client_ip(request) == "203.0.113.7"
    settings.TRUSTED_PROXY_HOPS = 5  # fewer entries than proxies: the nearest known address
    assert client_ip(request) == "10.0.0.2"


def test_without_trusted_proxies_a_forwarded_scheme_is_ignored() -> None:
    from django.test import RequestFactory

    request = RequestFactory().get("/", HTTP_X_FORWARDED_PROTO="https")
    assert request.is_secure() is False  # TRUSTED_PROXY_HOPS=0: the client speaks for itself


@pytest.mark.django_db
def test_an_origin_with_an_impossible_port_is_refused_not_a_500(binding: ChannelBinding) -> None:
    visitor = Visitor(binding, origin="https://shop.example:99999")

    preflight = visitor.client.options(
        f"/api/webchat/{binding.token}/sessions", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"
    )
    session = visitor.start()

    assert preflight.status_code == 403
    assert session.status_code == 403
    assert session.json()["error"]["code"] == "origin_not_allowed"
    assert "Access-Control-Allow-Origin" not in session
    assert visitor.token == ""

"""The agent page's model settings (issue #17): provider, model and whether a key is set (never
the key), "Probar conexión" against the fake Google server with the outcome in words, and the
warning when the provider cannot run (page banner and on save)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import Agent
from ai_agents.services.agents import agent_update
from ai_agents.tests.handoff_helpers import agent_for
from erp.llm.models import UsageLog
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db

NO_KEY = "Este agente usa Google, pero el servidor no tiene clave de API"


def _client(persona: Persona, language: str = "es") -> Client:
    client = Client(headers={"Accept-Language": language})
    client.force_login(persona.user)
    return client


def _google_agent(persona: Persona, model: str = "gemini-2.5-flash") -> Agent:
    agent = agent_for(persona.tenant)
    return agent_update(agent=agent, data={"provider": "google", "model": model})


def _page(client: Client, agent: Agent) -> str:
    response = client.get(f"/admin/ai_agents/agent/{agent.pk}/change/")
    assert response.status_code == 200
    return response.content.decode()


def _ping(client: Client, agent: Agent) -> tuple[int, dict[str, Any]]:
    response = client.post(f"/admin/ai_agents/agent/{agent.pk}/model-ping/")
    return response.status_code, json.loads(response.content)


def test_page_shows_provider_model_and_key_state_never_the_key(
    fake_google: FakeGoogle, owner: Persona
) -> None:
    agent = _google_agent(owner)

    html = _page(_client(owner), agent)

    assert "Estado del modelo" in html
    for field in ("name", "knowledge_bases", "escalation_triggers", "is_active"):
        assert f'name="{field}"' in html
    assert "<dd>Google</dd>" in html
    assert "<dd>gemini-2.5-flash</dd>" in html
    assert 'class="secret-badge secret-set">configurado<' in html
    assert "Probar conexión" in html
    assert "fake-google-key" not in html
    assert NO_KEY not in html


def test_add_page_has_the_widgets_and_the_model_state_without_ping(
    fake_google: FakeGoogle, owner: Persona
) -> None:
    response = _client(owner).get("/admin/ai_agents/agent/add/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<dd>gemma-4-26b-a4b-it</dd>" in html  # what a new agent would use
    assert "Probar conexión" not in html  # nothing saved to test yet
    assert html.count('class="agent-config"') == 5
    assert "ai_agents/agent_config.js" in html


def test_default_provider_names_what_the_platform_uses(
    fake_google: FakeGoogle, owner: Persona
) -> None:
    agent = agent_for(owner.tenant)  # provider "default", no model
    html = _page(_client(owner), agent)
    assert "Google <span" in html and "el configurado en la plataforma" in html
    assert "<dd>gemma-4-26b-a4b-it</dd>" in html


def test_google_without_key_warns_on_the_page_and_on_save(owner: Persona, settings: Any) -> None:
    settings.GOOGLE_AI_API_KEY = None
    agent = _google_agent(owner)
    client = _client(owner)

    html = _page(client, agent)
    assert html.count(NO_KEY) == 2  # the banner and the model panel
    assert 'class="warning"' in html
    assert 'class="secret-badge secret-unset">sin configurar<' in html

    # Saving is allowed (the key is the server's, not this form's), with the warning; the
    # page it lands on shows it once, not twice.
    form = {
        "name": "Soporte",
        "description": "",
        "system_prompt": "Eres Soporte.",
        "provider": "google",
        "model": "gemini-2.5-flash",
        "temperature": "0.7",
        "max_output_tokens": "1024",
        "tools_enabled": "[]",
        "history_config": "{}",
        "intent_detection": "{}",
        "escalation_triggers": "[]",
        "processing_config": "{}",
        "fallback_message": "Perdón.",
        "escalation_message": "Le paso.",
        "is_active": "on",
        "_continue": "1",
    }
    response = client.post(f"/admin/ai_agents/agent/{agent.pk}/change/", form, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][1] == 302
    agent.refresh_from_db()
    assert agent.name == "Soporte"
    assert html.count(NO_KEY) == 2
    assert 'class="success"' in html  # the admin's own message survives the check for duplicates


def test_english_page(fake_google: FakeGoogle, owner: Persona, settings: Any) -> None:
    settings.GOOGLE_AI_API_KEY = None
    agent = _google_agent(owner)
    html = _page(_client(owner, "en"), agent)
    assert "Test connection" in html
    assert "This agent uses Google, but the server has no API key" in html
    assert "Model status" in html


def test_ping_ok_records_usage(fake_google: FakeGoogle, owner: Persona) -> None:
    agent = _google_agent(owner)
    fake_google.push(fake_google.reply("pong", input_tokens=9, output_tokens=1))

    status, body = _ping(_client(owner), agent)

    assert status == 200
    assert body["ok"] is True
    assert body["message"].startswith("Conexión correcta: google · gemini-2.5-flash respondió en ")
    assert fake_google.requests[0].path.endswith("/models/gemini-2.5-flash:generateContent")
    log = UsageLog.objects.for_tenant(owner.tenant).get()
    assert (log.success, log.agent_id, log.input_tokens) == (True, agent.pk, 9)


@pytest.mark.parametrize(
    ("behaviour", "words", "detail"),
    [
        ("unauthorized", "La clave de API no es válida o no tiene permiso", "401"),
        ("invalid_key", "La clave de API no es válida o no tiene permiso", "API key not valid"),
        ("quota", "Se agotó la cuota del proveedor", "You exceeded your current quota"),
        ("bad_model", "El proveedor rechazó la petición; revise el nombre del modelo", "404"),
    ],
)
def test_ping_failure_in_words(
    fake_google: FakeGoogle, owner: Persona, behaviour: str, words: str, detail: str
) -> None:
    scripted = {
        "unauthorized": fake_google.error(401, "Request had invalid authentication credentials."),
        "invalid_key": fake_google.invalid_key(),
        "quota": fake_google.rate_limited(),
        "bad_model": fake_google.error(404, "models/gemini-9 is not found"),
    }
    agent = _google_agent(owner)
    fake_google.push(scripted[behaviour])

    status, body = _ping(_client(owner), agent)

    assert status == 200
    assert body["ok"] is False
    assert body["message"].startswith(words)
    assert detail in body["detail"]
    assert "fake-google-key" not in json.dumps(body)
    assert len(fake_google.requests) == 1  # one attempt: a ping reports the first failure
    assert UsageLog.objects.for_tenant(owner.tenant).get().success is False


def test_ping_unreachable_in_words(fake_google: FakeGoogle, owner: Persona, settings: Any) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.GOOGLE_AI_BASE_URL = f"http://127.0.0.1:{port}"
    agent = _google_agent(owner)

    status, body = _ping(_client(owner), agent)

    assert (status, body["ok"]) == (200, False)
    assert body["message"] == "No se pudo conectar con el proveedor, o no está disponible ahora."


def test_ping_without_key_in_english(owner: Persona, settings: Any) -> None:
    settings.GOOGLE_AI_API_KEY = None
    agent = _google_agent(owner)
    status, body = _ping(_client(owner, "en"), agent)
    assert (status, body["ok"]) == (200, False)
    assert body["message"] == (
        "The provider is not configured on the server (the key or the address is missing)."
    )


def test_outsider_gets_404_member_403_and_nothing_is_called(
    fake_google: FakeGoogle, owner: Persona, member: Persona, outsider: Persona
) -> None:
    agent = _google_agent(owner)

    assert _ping(_client(outsider), agent)[0] == 404
    assert _client(outsider).get(f"/admin/ai_agents/agent/{agent.pk}/change/").status_code == 404
    status, body = _ping(_client(member), agent)
    assert status == 403 and "Solo quien puede editar" in body["error"]
    html = _page(_client(member), agent)  # the member sees the state, without the button
    assert "<dd>gemini-2.5-flash</dd>" in html and "Probar conexión" not in html

    assert fake_google.requests == []
    assert not UsageLog.objects.unscoped().exists()


def test_member_of_two_tenants_pings_each_agent_under_its_tenant(
    fake_google: FakeGoogle, owner: Persona, outsider: Persona
) -> None:
    MembershipFactory.create(tenant=outsider.tenant, user=owner.user, role=Membership.Role.OWNER)
    mine, theirs = _google_agent(owner), _google_agent(outsider, model="gemini-2.0-flash")
    client = _client(owner)

    for agent in (mine, theirs):
        status, body = _ping(client, agent)
        assert (status, body["ok"]) == (200, True)
        assert f"<dd>{agent.model}</dd>" in _page(client, agent)

    logs = UsageLog.objects.unscoped().order_by("created_at")
    assert [(log.tenant_id, log.agent_id) for log in logs] == [
        (owner.tenant.pk, mine.pk),
        (outsider.tenant.pk, theirs.pk),
    ]

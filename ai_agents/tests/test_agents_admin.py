from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from ai_agents.models import Agent

pytestmark = pytest.mark.django_db

FORM = {
    "name": "Soporte",
    "system_prompt": "Eres {{agent_name}}.",
    "provider": "default",
    "model": "",
    "temperature": "0.5",
    "max_output_tokens": "512",
    "tools_enabled": "[]",
    "history_config": "",
    "intent_detection": "",
    "escalation_triggers": "",
    "processing_config": '{"rag_timeout_ms": 900}',
    "fallback_message": "Perdón.",
    "escalation_message": "Le paso con alguien.",
    "is_active": "on",
}


def test_admin_shows_which_config_key_is_wrong_and_completes_defaults(owner: Any) -> None:
    client = Client()
    client.force_login(owner.user)

    bad = client.post(
        "/admin/ai_agents/agent/add/", {**FORM, "processing_config": '{"rag_timeout": 900}'}
    )
    assert bad.status_code == 200
    assert "processing_config.rag_timeout" in bad.content.decode()
    assert not Agent.objects.unscoped().exists()

    ok = client.post("/admin/ai_agents/agent/add/", FORM)
    assert ok.status_code == 302, ok.content.decode()[:2000]
    agent = Agent.objects.unscoped().get()
    assert agent.tenant_id == owner.membership.tenant_id
    assert agent.processing_config["rag_timeout_ms"] == 900
    assert agent.processing_config["total_timeout_ms"] == 45000
    assert agent.history_config["max_messages"] == 20

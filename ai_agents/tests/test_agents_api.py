from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Agent, KnowledgeBase

pytestmark = pytest.mark.django_db


def _create(api: Any, **extra: Any) -> Any:
    return api.post(
        "/api/v1/agents",
        {"name": "Ventas", "system_prompt": "Eres {{agent_name}} de {{company_name}}.", **extra},
        format="json",
    )


def test_create_needs_only_name_and_prompt_and_gets_the_spec_defaults(api_a: Any) -> None:
    response = _create(api_a)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["history_config"]["max_messages"] == 20
    assert body["processing_config"]["rag_timeout_ms"] == 5000
    assert body["processing_config"]["total_timeout_ms"] == 45000
    assert body["processing_config"]["messages_per_minute"] == 20
    assert body["processing_config"]["max_tool_rounds"] == 3
    assert body["intent_detection"]["mode"] == "hybrid"
    assert body["knowledge_bases"] == []
    assert body["fallback_message"]
    listed = api_a.get("/api/v1/agents").json()
    assert [a["id"] for a in listed["results"]] == [body["id"]]
    assert listed["next"] is None


def test_partial_config_is_completed_and_bad_keys_are_named(api_a: Any) -> None:
    ok = _create(api_a, processing_config={"rag_timeout_ms": 800})
    assert ok.status_code == 201
    assert ok.json()["processing_config"]["rag_timeout_ms"] == 800
    assert ok.json()["processing_config"]["llm_timeout_ms"] == 30000

    bad = _create(api_a, processing_config={"rag_timeout": 800})
    assert bad.status_code == 400
    assert bad.json()["error"]["field"] == "processing_config"
    assert "processing_config.rag_timeout" in bad.json()["error"]["message"]

    trigger = _create(api_a, escalation_triggers=[{"type": "mood", "condition": {}}])
    assert trigger.status_code == 400
    error = trigger.json()["error"]
    assert error["field"] == "escalation_triggers"
    assert "Disparador 1" in error["fields"]["escalation_triggers"][0]
    assert "mood" in error["message"]

    slow = _create(api_a, processing_config={"llm_timeout_ms": 60000})  # RN-1: 30 s at most
    assert slow.status_code == 400
    assert "processing_config.llm_timeout_ms" in slow.json()["error"]["message"]

    typo = _create(api_a, tools_enabled=["contact_get", "consultar_pedidos"])
    assert typo.status_code == 400
    assert typo.json()["error"]["field"] == "tools_enabled"
    assert "consultar_pedidos" in typo.json()["error"]["message"]
    assert "contact_get" in typo.json()["error"]["message"]  # listed among the available

    missing = api_a.post("/api/v1/agents", {"name": "x"}, format="json")
    assert missing.status_code == 400
    assert "system_prompt" in str(missing.json())
    assert Agent.objects.unscoped().count() == 1


def test_patch_delete_and_knowledge_bases_of_own_tenant_only(
    api_a: Any, api_b: Any, tenant_a: Any, tenant_b: Any
) -> None:
    own = KnowledgeBase.objects.unscoped().create(tenant=tenant_a, name="FAQ")
    other = KnowledgeBase.objects.unscoped().create(tenant=tenant_b, name="Ajena")
    agent_id = _create(api_a).json()["id"]

    refused = api_a.patch(
        f"/api/v1/agents/{agent_id}", {"knowledge_bases": [str(other.pk)]}, format="json"
    )
    assert refused.status_code == 400
    assert "knowledge_bases" in str(refused.json())

    patched = api_a.patch(
        f"/api/v1/agents/{agent_id}",
        {"knowledge_bases": [str(own.pk)], "temperature": 0.2},
        format="json",
    )
    assert patched.status_code == 200
    assert patched.json()["knowledge_bases"] == [str(own.pk)]
    assert patched.json()["temperature"] == 0.2

    for method in ("get", "patch", "delete"):
        assert (
            getattr(api_b, method)(f"/api/v1/agents/{agent_id}", {}, format="json").status_code
            == 404
        )
    assert api_b.get("/api/v1/agents").json()["results"] == []
    assert api_a.get("/api/v1/agents/not-a-uuid").status_code == 404

    assert api_a.delete(f"/api/v1/agents/{agent_id}").status_code == 204
    assert api_a.get(f"/api/v1/agents/{agent_id}").status_code == 404


def test_an_agent_may_enable_its_own_tenants_http_tools_only(
    api_a: Any, api_b: Any, tenant_a: Any, tenant_b: Any
) -> None:
    from ai_agents.models import HttpTool

    for tenant, name in ((tenant_a, "pedidos_a"), (tenant_b, "pedidos_b")):
        HttpTool.objects.unscoped().create(
            tenant=tenant, name=name, description="x", url_template="https://erp.example/p"
        )

    assert _create(api_a, tools_enabled=["pedidos_a"]).status_code == 201
    refused = _create(api_a, tools_enabled=["pedidos_b"])
    assert refused.status_code == 400
    assert "pedidos_b" in refused.json()["error"]["message"]
    assert "pedidos_a" in refused.json()["error"]["message"]  # its own, among the available
    other = _create(api_b, tools_enabled=["pedidos_a"]).json()["error"]["message"]
    known = other.split("disponibles:")[1]
    assert "pedidos_b" in known and "pedidos_a" not in known  # A's names never shown to B

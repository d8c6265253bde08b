"""The playground, `POST /api/v1/agents/{id}/test`: the offline agent answers from its own
documents with the passages and scores, a keyword trigger fires (marked among the triggers),
nothing is stored but usage rows with operation `playground`, a provider error is told in
words, bad input is a 400 naming the field, and tenants never see each other's agents."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from ai_agents.models import Conversation, Message
from ai_agents.tests.conversations.support import create_agent, shipping_kb
from erp.llm.models import UsageLog
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fake_google import FakeGoogle

pytestmark = pytest.mark.django_db

REFUND = {"type": "keyword", "condition": {"keywords": ["reembolso"]}, "priority": "high"}


def offline_agent(api: Any, tenant: Tenant, **extra: Any) -> str:
    kb = shipping_kb(tenant)
    return create_agent(
        api,
        provider="offline",
        knowledge_bases=[str(kb.pk)],
        escalation_triggers=[REFUND],
        **extra,
    )


def _stored(tenant: Tenant) -> tuple[int, int]:
    return (
        Conversation.objects.unscoped().filter(tenant=tenant).count(),
        Message.objects.unscoped().filter(tenant=tenant).count(),
    )


def _operations(tenant: Tenant) -> set[str]:
    return set(
        UsageLog.objects.unscoped().filter(tenant=tenant).values_list("operation", flat=True)
    )


def test_reply_passages_scores_and_fired_trigger_without_storing_a_conversation(
    api_a: Any, tenant_a: Tenant
) -> None:
    agent_id = offline_agent(api_a, tenant_a)
    url = f"/api/v1/agents/{agent_id}/test"

    body = api_a.post(url, {"text": "¿Cuánto cuesta el envío?"}, format="json").json()
    assert "El envío cuesta 4,95 euros" in body["reply"]
    assert body["escalation"] is None
    assert body["passages"][0]["title"] == "envios.md"
    assert "4,95" in body["passages"][0]["content"]
    assert 0 < body["passages"][0]["score"] <= 1
    assert body["triggers"][0]["type"] == "keyword"
    assert not any(t["fired"] for t in body["triggers"])
    assert body["model"] and body["error"] is None
    assert {"receive", "triggers", "retrieve", "llm"} <= set(body["timings_ms"])
    assert body["usage"]["calls"] == 1

    history = [
        {"role": "user", "text": "Hola"},
        {"role": "assistant", "text": "Hola, ¿en qué le ayudo?"},
    ]
    fired = api_a.post(
        url, {"text": "Quiero un reembolso del envío", "history": history}, format="json"
    ).json()
    assert fired["escalation"]["reason"] == "keyword_match"
    assert fired["escalation"]["priority"] == "high"
    words = (fired["escalation"]["reason_label"], fired["escalation"]["priority_label"])
    assert words == ("El mensaje contiene una palabra clave configurada", "Alta")
    assert fired["triggers"][0] == {
        "type": "keyword",
        "label": "Palabras clave",
        "priority": "high",
        "priority_label": "Alta",
        "condition": {"keywords": ["reembolso"], "exclude": []},
        "condition_text": "palabras: reembolso",
        "fired": True,
    }
    assert [t["fired"] for t in fired["triggers"][1:]] == [False] * (len(fired["triggers"]) - 1)
    assert fired["passages"], "what the agent would have known is shown too"
    assert fired["model"] is None  # the trigger decided before the model, as in the pipeline

    assert _stored(tenant_a) == (0, 0)
    assert "playground" in _operations(tenant_a)
    assert _operations(tenant_a) <= {"playground"}  # never counted as a customer's


def test_a_provider_error_is_told_in_words(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a, provider="google", processing_config={"llm_max_retries": 0})
    fake_google.push(fake_google.unavailable())
    body = api_a.post(f"/api/v1/agents/{agent_id}/test", {"text": "Hola"}, format="json").json()
    assert body["error"] == "El proveedor del modelo no está disponible ahora."
    assert body["reply"]  # the fallback message the customer would get
    assert "503" not in body["error"] and "Unavailable" not in body["error"]
    assert _stored(tenant_a) == (0, 0)


def test_bad_input_is_a_400_naming_the_field_and_members_are_refused(
    api_a: Any, tenant_a: Tenant, member_client: Any
) -> None:
    agent_id = create_agent(api_a, provider="offline")
    url = f"/api/v1/agents/{agent_id}/test"
    cases = [
        ({}, "text"),
        ({"text": "x" * 4001}, "text"),
        ({"text": "hola", "history": "no"}, "history"),
        ({"text": "hola", "history": [{"role": "user", "text": "a"}] * 21}, "history"),
        ({"text": "hola", "history": [{"role": "system", "text": "a"}]}, "history"),
        ({"text": "hola", "history": [["user", "a"]]}, "history"),
    ]
    for payload, field in cases:
        response = api_a.post(url, payload, format="json")
        assert response.status_code == 400, payload
        assert response.json()["error"]["field"] == field
    assert api_a.post(url, ["hola"], format="json").status_code == 400
    assert member_client.post(url, {"text": "hola"}, format="json").status_code == 403
    assert _operations(tenant_a) == set()


def test_two_tenants_each_agent_only_under_its_own(
    api_a: Any, api_b: Any, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    agent_a = offline_agent(api_a, tenant_a)
    agent_b = create_agent(api_b, provider="offline")

    outsider = api_b.post(f"/api/v1/agents/{agent_a}/test", {"text": "hola"}, format="json")
    assert outsider.status_code == 404
    assert _operations(tenant_a) == set() and _operations(tenant_b) == set()

    user: Any = UserFactory(username="both@x.test")
    MembershipFactory.create(tenant=tenant_a, user=user, role=Membership.Role.ADMIN)
    MembershipFactory.create(tenant=tenant_b, user=user, role=Membership.Role.OWNER)
    both = APIClient()
    both.force_login(user)
    for agent_id, own, other in ((agent_a, "acme", "globex"), (agent_b, "globex", "acme")):
        url = f"/api/v1/agents/{agent_id}/test"
        mine = both.post(url, {"text": "hola"}, format="json", HTTP_X_TENANT=own)
        assert mine.status_code == 200, mine.content
        theirs = both.post(url, {"text": "hola"}, format="json", HTTP_X_TENANT=other)
        assert theirs.status_code == 404
    assert _stored(tenant_a) == (0, 0) and _stored(tenant_b) == (0, 0)


def test_tools_that_change_data_are_not_run_and_reads_are(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    kb = shipping_kb(tenant_a)
    agent_id = create_agent(
        api_a,
        provider="google",
        knowledge_bases=[str(kb.pk)],
        tools_enabled=["session_variable_set", "knowledge_search"],
    )
    fake_google.push(
        fake_google.reply_json(
            {"action": "session_variable_set", "variable": "pedido", "value": "A-17"}
        ),
        fake_google.reply_json({"action": "knowledge_search", "query": "horario"}),
        fake_google.reply_json({"action": "respond", "answer": "Abrimos de 8:00 a 20:00."}),
    )
    body = api_a.post(
        f"/api/v1/agents/{agent_id}/test",
        {"text": "Mi pedido es A-17, ¿qué horario?"},
        format="json",
    ).json()

    assert body["reply"] == "Abrimos de 8:00 a 20:00."
    skipped, searched = body["tool_calls"]
    assert (skipped["tool"], skipped["skipped"]) == ("session_variable_set", True)
    assert searched["tool"] == "knowledge_search" and searched["ok"] and "skipped" not in searched
    assert "20:00" in searched["result"]
    assert "no se ejecutó" in str(fake_google.generate_requests[1]["contents"])
    assert body["usage"]["calls"] == 3
    assert _stored(tenant_a) == (0, 0)
    tools = UsageLog.objects.unscoped().filter(tenant=tenant_a, provider="tool")
    assert [(r.model, r.operation) for r in tools] == [("knowledge_search", "playground")]

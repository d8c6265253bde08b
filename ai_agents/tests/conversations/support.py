"""What the message API tests share: an agent, a message (sent, or sent and checked), a
reply's stored metadata, the shipping knowledge base, a queued model answer."""

from __future__ import annotations

from typing import Any

from ai_agents.services.knowledge import document_ingest, knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle

SHIPPING = (
    "# Envíos\n\nEnviamos a toda la península en 48 horas. El envío cuesta 4,95 euros y es "
    "gratis a partir de 50 euros de compra.\n\n"
    "# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00.\n"
)
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def create_agent(api: Any, **extra: Any) -> str:
    """An agent named Lucía, through the API, whose prompt uses the context variables."""
    body = {
        "name": "Lucía",
        "system_prompt": "Eres {{agent_name}}, asistente de {{company_name}}. "
        "Cliente: {{customer_name}}. Hoy: {{current_date}}.",
        "processing_config": FAST,
        **extra,
    }
    response = api.post("/api/v1/agents", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def send_message(api: Any, agent_id: str, text: str, **extra: Any) -> Any:
    """POST one message from the contact cli-1 (Ana)."""
    body = {"contact": {"external_id": "cli-1", "name": "Ana"}, "text": text, **extra}
    return api.post(f"/api/v1/agents/{agent_id}/messages", body, format="json")


def say(api: Any, agent_id: str, text: str, *, contact: str = "cli-1") -> dict[str, Any]:
    """POST one message from the contact `contact` and check it was answered: the JSON body."""
    response = send_message(api, agent_id, text, contact={"external_id": contact})
    assert response.status_code == 200, response.content
    return dict(response.json())


def reply_metadata(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    """The stored metadata of the reply in a message response `body` (read through the API)."""
    messages = api.get(f"/api/v1/conversations/{body['conversation_id']}").json()["messages"]
    return dict(next(m for m in messages if m["id"] == body["reply"]["id"])["metadata"])


def shipping_kb(tenant: Tenant, **options: Any) -> Any:
    """A knowledge base holding the shipping page (ingested)."""
    kb = knowledge_base_create(tenant=tenant, name="FAQ", **options)
    added = document_add(kb=kb, data=SHIPPING.encode(), filename="envios.md", enqueue=False)
    document_ingest(document=added.document)
    return kb


def push_answer(fake: FakeGoogle, text: str, **fields: Any) -> None:
    """Queue the model's next reply: a `respond` action with this answer."""
    fake.push(fake.reply_json({"action": "respond", "answer": text, **fields}))

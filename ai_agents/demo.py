"""The demo knowledge base: `fixtures/demo_kb/*.md`, loaded by `demo_load` (idempotent by
content hash: unchanged documents are not embedded again)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from ai_agents.services.knowledge import knowledge_base_get_or_create
from ai_agents.services.knowledge_documents import document_add_and_ingest
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope

DEMO_KB_NAME = "Preguntas frecuentes"
DEMO_KB_DIR = Path(settings.BASE_DIR) / "fixtures" / "demo_kb"


def demo_knowledge_load(tenant: Tenant) -> None:
    with tenant_scope(tenant):
        kb, _created = knowledge_base_get_or_create(
            tenant=tenant,
            name=DEMO_KB_NAME,
            description="Horarios, precios, entregas y políticas de la panadería.",
        )
        for path in sorted(DEMO_KB_DIR.glob("*.md")):
            if path.name.lower() == "readme.md":
                continue
            document_add_and_ingest(kb=kb, data=path.read_bytes(), filename=path.name)


DEMO_AGENT_NAME = "Asistente de la panadería"
DEMO_AGENT_PROMPT = (
    "Eres {{agent_name}}, el asistente virtual de {{company_name}}. Hoy es {{current_date}}. "
    "Responde en español, con amabilidad y en pocas frases, usando solo la información "
    "relevante que se te da. Si no la tienes, dilo y ofrece pasar la conversación a una persona."
)


def demo_agent_load(tenant: Tenant) -> None:
    """The demo agent, answering from the demo knowledge base. It uses the platform's model
    (the offline provider when no model is configured)."""
    from ai_agents.models import Agent, KnowledgeBase
    from ai_agents.services.agents import agent_create

    if Agent.objects.for_tenant(tenant).filter(name=DEMO_AGENT_NAME).exists():
        return
    kbs = KnowledgeBase.objects.for_tenant(tenant).filter(name=DEMO_KB_NAME)
    agent_create(
        tenant=tenant,
        data={
            "name": DEMO_AGENT_NAME,
            "system_prompt": DEMO_AGENT_PROMPT,
            "knowledge_bases": [kb.pk for kb in kbs],
        },
    )


def demo_webchat_load(tenant: Tenant) -> None:
    """A web chat for the demo agent, so `make run` can show the widget at /webchat/demo and a
    handoff in /inbox/ (origins: the local server; the demo page is same-origin anyway)."""
    from ai_agents.models import Agent, ChannelBinding

    agent = Agent.objects.for_tenant(tenant).filter(name=DEMO_AGENT_NAME).first()
    bindings = ChannelBinding.objects.for_tenant(tenant)
    if agent is None or bindings.filter(type=ChannelBinding.Type.WEBCHAT).exists():
        return
    port = settings.PORT
    bindings.create(
        tenant=tenant,
        agent=agent,
        type=ChannelBinding.Type.WEBCHAT,
        name="Chat de la web (demo)",
        allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
    )

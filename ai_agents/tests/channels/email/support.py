"""Shared pieces of the e-mail channel tests: the raw MIME fixtures, a binding, posts to the
webhook and what the fake model was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from erp.testing.fake_google import FakeGoogle

FIXTURES = Path(__file__).parent / "fixtures"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def eml(name: str, **replace: str) -> bytes:
    text = (FIXTURES / f"{name}.eml").read_text(encoding="utf-8")
    for key, value in replace.items():
        text = text.replace("{" + key + "}", value)
    return text.encode("utf-8")


def email_binding(tenant: Any, address: str = "ayuda@tienda.es") -> ChannelBinding:
    agent = agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant, agent=agent, type=ChannelBinding.Type.EMAIL, address=address
    )


def post(client: Any, binding: ChannelBinding, raw: bytes, **kw: Any) -> Any:
    return client.post(
        f"/webhooks/email/{binding.token}",
        data=raw,
        content_type=kw.pop("content_type", "message/rfc822"),
        **kw,
    )


def respond(fake: FakeGoogle, text: str) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text}))


def model_saw(fake: FakeGoogle, index: int = -1) -> str:
    return str(fake.generate_requests[index]["contents"])

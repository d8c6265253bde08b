"""Shared pieces of the web chat tests: a binding with its origins, a visitor's browser on one
origin, the fake model's answer, and SSE events read back."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle

ORIGIN = "https://shop.example"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def webchat_binding(tenant: Tenant, name: str, origins: list[str]) -> ChannelBinding:
    agent = agent_create(
        tenant=tenant,
        data={"name": name, "system_prompt": f"Eres {name}.", "processing_config": FAST},
    )
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant, agent=agent, type=ChannelBinding.Type.WEBCHAT, allowed_origins=origins
    )


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


def respond(fake: FakeGoogle, text: str, **kw: Any) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text, "confidence": 0.9}, **kw))


def sse_events(raw: str) -> list[tuple[str, Any]]:
    events = []
    for block in raw.split("\n\n"):
        if block.strip():
            lines = dict(line.split(": ", 1) for line in block.splitlines())
            events.append((lines["event"], json.loads(lines["data"])))
    return events

"""What the WhatsApp benches (webhook_load, concurrency) share: the business number and app
secret they sign with, the environment pointing the product at their fakes, the tenant with
its agent and WhatsApp binding, and one customer's webhook."""

from __future__ import annotations

from typing import Any

from erp.testing.whatsapp_traffic import signed_headers, text_webhook

APP_SECRET = "bench-app-secret"
NUMBER = "106540352242922"
FIRST_WA_ID = 34600000000


def fakes_env(urls: dict[str, str]) -> dict[str, str]:
    """The settings that send the model and Graph API calls to the fakes at `urls`."""
    return {
        "GOOGLE_AI_BASE_URL": urls["google"],
        "GOOGLE_AI_API_KEY": "bench-key",
        "WHATSAPP_APP_SECRET": APP_SECRET,
        "WHATSAPP_VERIFY_TOKEN": "bench-verify",
        "WHATSAPP_GRAPH_BASE_URL": urls["graph"],
    }


def fixture(*, slug: str, processing: dict[str, Any] | None = None) -> Any:
    """A tenant with credit, an agent (`processing`: more of its processing_config) and its
    WhatsApp binding on NUMBER (as the owner); returns the tenant."""
    from decimal import Decimal

    from ai_agents.models import ChannelBinding
    from ai_agents.services.agents import agent_create
    from erp.tenancy.models import Tenant
    from erp.tenancy.scoping import tenant_scope

    tenant = Tenant.objects.create(
        slug=slug, name="Tienda Bench", ai_credit_balance_usd=Decimal("100000")
    )
    with tenant_scope(tenant):
        agent = agent_create(
            tenant=tenant,
            data={
                "name": "Lucía",
                "system_prompt": "Eres Lucía. Responde breve.",
                "processing_config": {"tokens_per_minute": 10_000_000, **(processing or {})},
            },
        )
        ChannelBinding.objects.create(
            tenant=tenant,
            agent=agent,
            type=ChannelBinding.Type.WHATSAPP,
            phone_number_id=NUMBER,
            access_token="bench-token",
        )
    return tenant


# Consecutive messages ask different things: a customer who asks the same question again is
# a loop (`ai_agents.rules.loops`), escalated, and the bot's reply to it is not sent.
QUESTIONS = ("¿Abren el sábado?", "¿Hacen envíos a Sevilla?", "¿Cuánto cuesta la reparación?")


def webhook_body(*, n: int, customer: int, prefix: str) -> bytes:
    """Message number `n` (id `wamid.<prefix>-<n>`) from customer number `customer`."""
    return text_webhook(
        number=NUMBER,
        wa_id=str(FIRST_WA_ID + customer),
        wamid=f"wamid.{prefix}-{n:06d}",
        text=f"{QUESTIONS[n % len(QUESTIONS)]} ({n})",
    )


def headers(body: bytes) -> dict[str, str]:
    """The signed headers of Meta's POST of `body`."""
    return signed_headers(body, secret=APP_SECRET)

"""What WhatsApp bills for a message we sent: one ledger row per delivery handed to Graph.

Since October 2026 every message is billed: free-form ones inside the 24-hour window as
"service", templates by their category (the synced template's, which the adapter passes;
"utility" when unknown). The charge is keyed on the delivery (one per message part), so a
retried task or a redelivered webhook never bills it twice (erp/llm/pricing.py).
"""

from __future__ import annotations

from typing import Any

from ai_agents.models import ChannelBinding, Conversation, Delivery
from erp.llm.models import TEMPLATE_CATEGORIES, MessageCategory
from erp.llm.pricing import channel_charge_record

CHANNEL = "whatsapp"


def message_category(binding: ChannelBinding, body: dict[str, Any], category: str = "") -> str:
    """`category`: the sent template's own (a synced template); else the binding's."""
    if body.get("type") != "template":
        return MessageCategory.SERVICE.value
    category = category or str((binding.whatsapp_template or {}).get("category") or "")
    return category if category in TEMPLATE_CATEGORIES else MessageCategory.UTILITY.value


def whatsapp_charge_record(
    *,
    delivery: Delivery,
    conversation: Conversation,
    binding: ChannelBinding,
    body: dict[str, Any],
    category: str = "",
) -> None:
    """The channel-cost row of a delivery Graph accepted (idempotent)."""
    channel_charge_record(
        tenant=conversation.tenant,
        charge_key=f"{CHANNEL}:{delivery.pk}",
        channel=CHANNEL,
        phone=str(body.get("to") or ""),
        category=message_category(binding, body, category),
        agent_id=conversation.agent_id,
        conversation_id=conversation.pk,
        message_id=delivery.message_id,
    )

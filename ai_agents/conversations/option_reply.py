"""A customer who types their choice instead of tapping it: "2", "2." or an option's title in
answer to the options of the bot's last answer in the thread. WhatsApp text messages, web chat
messages without a chip and e-mail replies all go through `typed_option_pick` (one rule,
`ai_agents/rules/options.py`), so the pipeline gets the option's id in the message's metadata
(`option_id`) as for a WhatsApp button, a list row or a web chat chip."""

from __future__ import annotations

from typing import Any

from ai_agents.models import Message
from ai_agents.rules.options import option_may_be_named, option_pick, options_of


def typed_option_pick(
    *, binding: Any, channel: str, thread_id: str, text: str
) -> tuple[str, dict[str, str]]:
    """(the text, {"option_id": ...}) when `text` chooses an option of the latest bot answer
    of this thread (the binding's tenant and agent; a bare number gets the title after it,
    "2 (Domingo)"). Otherwise (`text`, {}); a message that cannot name an option reads
    nothing."""
    if not option_may_be_named(text):
        return text, {}
    latest = (
        Message.objects.for_tenant(binding.tenant_id)
        .filter(
            conversation__agent_id=binding.agent_id,
            conversation__channel=channel,
            conversation__channel_conversation_id=thread_id,
            role=Message.Role.ASSISTANT,
        )
        .order_by("-created_at")
        .values_list("metadata", flat=True)
        .first()
    )
    return option_pick(text, options_of(latest))

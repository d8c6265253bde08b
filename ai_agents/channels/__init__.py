"""Channels: how messages arrive from and replies leave through WhatsApp, e-mail and the web
chat. Each channel module registers an adapter here; the pipeline never imports them.

    inbound_accept(binding, inbound)   store the message (before the webhook answers 200) and
                                       queue its answer on the real-time queue
    reply_deliver(message_id)          send a stored reply on its conversation's channel, unless a
                                       person holds the conversation and the reply is the bot's
"""

from __future__ import annotations

from typing import Any, Protocol


class ChannelAdapter(Protocol):
    def send(self, *, binding: Any, conversation: Any, message: Any) -> str:
        """Hands the message to the channel; records Delivery rows; returns the message's
        delivery status. Never raises for channel errors (they are recorded)."""
        ...

    def typing(self, *, binding: Any, conversation: Any, inbound: Any) -> None:
        """Optional: shows the customer we are working (WhatsApp read + typing indicator)."""
        ...


_adapters: dict[str, ChannelAdapter] = {}


def adapter_register(channel: str, adapter: ChannelAdapter) -> None:
    _adapters[channel] = adapter


def adapter_for(channel: str) -> ChannelAdapter | None:
    """The adapter of a pushing channel; None for channels the client pulls from (REST API,
    web chat)."""
    from ai_agents.channels import registry  # noqa: F401  (imports the channel modules)

    return _adapters.get(channel)

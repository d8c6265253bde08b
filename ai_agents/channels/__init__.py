"""Channels: how messages arrive from and replies leave through WhatsApp, e-mail and the web
chat, one package each (`whatsapp/`, `email/`, `webchat/`: adapter, parsing, views, urls).

The channels that push replies name their adapter class in `ADAPTERS` (a dotted path, imported
on first use and cached), so nothing has to be imported for its side effects and the engine never
imports a channel module. The web chat and the REST API have no adapter: their clients pull.

    inbound_accept(binding, inbound)   store the message (before the webhook answers 200) and
                                       queue its answer on the real-time queue
    reply_deliver(message_id)          send a stored reply on its conversation's channel, unless a
                                       person holds the conversation and the reply is the bot's
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from django.utils.module_loading import import_string

ADAPTERS: dict[str, str] = {
    "whatsapp": "ai_agents.channels.whatsapp.adapter.WhatsAppAdapter",
    "email": "ai_agents.channels.email.adapter.EmailAdapter",
}


class ChannelAdapter(Protocol):
    def send(self, *, binding: Any, conversation: Any, message: Any) -> str:
        """Hands the message to the channel; records Delivery rows; returns the message's
        delivery status. Never raises for channel errors (they are recorded)."""
        ...

    def typing(self, *, binding: Any, conversation: Any, inbound: Any) -> None:
        """Optional: shows the customer we are working (WhatsApp read + typing indicator)."""
        ...


_adapters: dict[str, ChannelAdapter] = {}


def adapter_for(channel: str) -> ChannelAdapter | None:
    """The adapter of a pushing channel; None for channels the client pulls from (REST API,
    web chat). Adapters hold no state, so two threads racing on the first use build two
    interchangeable instances and no lock is needed."""
    adapter = _adapters.get(channel)
    if adapter is None and channel in ADAPTERS:
        adapter = _adapters[channel] = import_string(ADAPTERS[channel])()
    return adapter


@contextmanager
def adapter_installed(channel: str, adapter: ChannelAdapter) -> Iterator[ChannelAdapter]:
    """Puts `adapter` in place of the channel's for the block (tests' recording adapters),
    then restores what was there."""
    previous = _adapters.get(channel)
    _adapters[channel] = adapter
    try:
        yield adapter
    finally:
        if previous is None:
            _adapters.pop(channel, None)
        else:
            _adapters[channel] = previous

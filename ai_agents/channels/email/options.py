"""A bot answer's `options` in an e-mail (ai_agents/rules/options.py): a numbered list under
the text, in the plain body and in an HTML alternative, with a line that says the customer may
answer with the number or the title. A reply in that thread that is only a number of the list
or a title ("2", "2.", "Envío urgente") is the customer choosing that option: its id goes to the
message's metadata (`option_id`), like a WhatsApp button or a web chat chip, and a bare number
is stored with the title after it ("2 (Domingo)": the model never saw the list as numbers)."""

from __future__ import annotations

from typing import Any

from django.utils.html import escape, linebreaks
from django.utils.translation import gettext as _
from django.utils.translation import override

from ai_agents.models import ChannelBinding, Message
from ai_agents.rules.options import option_chosen, options_numbered, options_of
from erp.llm.language import customer_language

CHANNEL = "email"


def email_bodies(message: Message) -> tuple[str, str | None]:
    """(plain text, HTML or None): the answer, then its options numbered."""
    options = options_of(message.metadata)
    if not options:
        return message.content, None
    with override(customer_language([message.content])):
        hint = _("Responda con el número o el título de una opción:")
    text = f"{message.content.rstrip()}\n\n{hint}\n{options_numbered(options)}"
    items = "".join(
        f"<li>{escape(o['title'])}"
        + (f" — {escape(o['description'])}" if o.get("description") else "")
        + "</li>"
        for o in options
    )
    html = (
        f"{linebreaks(message.content, autoescape=True)}\n<p>{escape(hint)}</p>\n<ol>{items}</ol>"
    )
    return text, html


def email_option_pick(
    *, binding: ChannelBinding, thread_id: str, text: str
) -> tuple[str, dict[str, Any]]:
    """(the text, {"option_id": ...}) when `text` chooses an option of the latest bot answer
    of this thread (the binding's tenant and agent); a bare number gets the option's title
    after it ("2 (Domingo)"), so the model and the staff read what was chosen. Otherwise
    (`text`, {})."""
    if not text.strip() or len(text) > 200:
        return text, {}
    latest = (
        Message.objects.for_tenant(binding.tenant_id)
        .filter(
            conversation__agent_id=binding.agent_id,
            conversation__channel=CHANNEL,
            conversation__channel_conversation_id=thread_id,
            role=Message.Role.ASSISTANT,
        )
        .order_by("-created_at")
        .values_list("metadata", flat=True)
        .first()
    )
    chosen = option_chosen(text, options_of(latest))
    if chosen is None:
        return text, {}
    named = (
        text
        if chosen["title"].casefold() in text.casefold()
        else f"{text.strip()} ({chosen['title']})"
    )
    return named, {"option_id": chosen["id"]}

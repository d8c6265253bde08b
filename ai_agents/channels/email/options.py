"""A bot answer's `options` in an e-mail (ai_agents/rules/options.py): a numbered list under
the text, in the plain body and in an HTML alternative, with a line that says the customer may
answer with the number or the title. A reply in that thread that is only a number of the list
or a title ("2", "2.", "Envío urgente") is the customer choosing that option, as on WhatsApp and
in the web chat (ai_agents/conversations/option_reply.py): its id goes to the message's
metadata (`option_id`) and a bare number is stored with the title after it ("2 (Domingo)")."""

from __future__ import annotations

from django.utils.html import escape, linebreaks
from django.utils.translation import gettext as _
from django.utils.translation import override

from ai_agents.models import Message
from ai_agents.rules.options import options_numbered, options_of
from erp.llm.language import customer_language


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

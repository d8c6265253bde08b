"""The customer's answer to the bot's offer of a person (after "No tengo esa información;
¿quiere que le pase con una persona del equipo?").

`offer_reply(text)` reads a SHORT reply, Spanish or English, normalised (no accents, any case,
typos of the common words): "sí", "sí por favor", "claro", "ok pásame", "yes please", "sure,
go ahead" -> "accept"; "no", "no gracias", "ahora no", "no thanks", "I'm fine" -> "decline";
anything with other words ("sí, pero ¿cuánto cuesta la concha?", a new question) -> None: the
bot answers it as usual. Only meaningful right after the offer (ai_agents/conversations/
no_answer.py checks that the previous reply was the no-answer one).

`offer_decision(triggers)`: the escalation for an accepted offer: reason `user_request`, the
priority of a configured user_request trigger (its own message too) or high.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from django.utils.translation import gettext_noop

from ai_agents.rules.detail import detail
from ai_agents.rules.escalation import EscalationDecision, EscalationTrigger
from ai_agents.rules.text import words

OfferReply = Literal["accept", "decline"]

MAX_WORDS = 10


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


ACCEPT = _set(
    """si sii sip sipi simon claro ok okay oki okey vale va sale dale bueno adelante andale
    perfecto porfa porfavor pasame paseme pasa pase pasalo comunicame comuniqueme
    transfiereme contactame contacteme llamenme marquenme yes yeah yep yup sure please
    pls plz connect transfer absolutely definitely acepto quiero gustaria acuerdo"""
)
DECLINE = _set("""no nop nope nel nah not nunca never""")
# Declines made only of filler words.
DECLINE_PHRASES = (
    "estoy bien",
    "asi esta bien",
    "asi estoy bien",
    "i m fine",
    "es todo",
    "im fine",
)
# Words that may go with either answer without changing it.
FILLER = _set(
    """por favor gracias muchas thanks thank you de acuerdo con una un el la al a me lo le te
    persona personas alguien equipo humano agente asesor ejecutivo del of to with the
    team someone somebody a an person human agent real i i'd d would like that it do go
    ahead then entonces pues ahora mismo ya seria genial muy amable great fine estoy
    estamos esta asi bien mejor need necesario hace falta now im m por right away
    porfis okey va quisiera that s good que es todo"""
)


def offer_reply(text: str) -> OfferReply | None:
    """ "accept", "decline", or None when the message says something else."""
    tokens = words(text)
    if not tokens or len(tokens) > MAX_WORDS:
        return None
    if any(t not in ACCEPT and t not in DECLINE and t not in FILLER for t in tokens):
        return None
    joined = " ".join(tokens)
    if any(t in DECLINE for t in tokens) or any(p in joined for p in DECLINE_PHRASES):
        return "decline"
    if any(t in ACCEPT for t in tokens):
        return "accept"
    # Only filler words: "por favor" / "please" accept; "gracias" alone says nothing.
    return "accept" if "por favor" in joined or "please" in joined else None


def offer_decision(triggers: Iterable[EscalationTrigger]) -> EscalationDecision:
    """The escalation for an accepted offer of a person."""
    configured = next((t for t in triggers if t.type == "user_request"), None)
    return EscalationDecision(
        reason="user_request",
        priority=configured.priority if configured is not None else "high",
        trigger_type="user_request",
        detail=detail(gettext_noop("el cliente aceptó la oferta de hablar con una persona")),
        message=configured.message if configured is not None else None,
    )

"""Requests for a person phrased as DELEGATION or ESCALATION, on NORMALISED text (the phrase
layer, `person_phrases`, checks them after `person_frames.FRAMES`):

- bringing a person in: "can u loop in a person", "bring in a human", "quisiera escalar esto
  con una persona responsable", "escalen mi caso";
- relaying through the bot: "dile a tu jefe que me escriba", "tell your manager to call me";
- a person to act on the customer's behalf on the phone: "I want somebody on the phone who
  can do it for me", "alguien al teléfono";
- a call-back for SOMEONE ELSE (`CALL_FOR`): "¿puede alguien de ustedes llamarla al 55...?",
  "can someone ring him on 0412...", "que alguien le marque a mi papá": a request that a person
  contact the customer or a relative is a request for a person (the relative is mentioned in another
  clause, or as the one to be called: "him", "my dad");
- asking who at the company one can talk to: "Who at your company can I actually talk to?",
  "¿con quién puedo ver lo de mi factura?";
- refusing the bot: "Not interested in chatting with an AI" (`REFUSE`, a negation that is part
  of the request).

`REFUSE` and `CALL_FOR` are checked like `person_lexicon.STRONG` (the "talks about someone"
context does not cancel them); `DELEGATION` like the other request frames.
"""

from __future__ import annotations

import re

from ai_agents.rules.person_frames import _OBJ_ES
from ai_agents.rules.person_lexicon import _RELATION_EN, _ROLE_EN

_WHO_EN = (
    r"(?:someone|somebody|anyone|anybody|a person|a human|a real person|one of you|one of your "
    r"\w+|an agent|a rep|a manager|a supervisor|a staff member|a member of (?:staff|your team)|"
    r"a team member|(?:someone|somebody|anyone) (?:in|from|at|on) "
    r"(?:the |your )?\w+(?: team| department| dept)?)"
)
_ACT_EN = (
    r"(?:call|phone|ring|contact|email|e mail|text|message|write to|reach out to|get back to|"
    r"get in touch with|follow up with|reach)"
)
_THEM_EN = (  # the one to be called, with no direct object after it ("email me the invoice")
    rf"(?:me|us|him|her|them|my (?:{_RELATION_EN}|mum|mama|cell|mobile|phone|number|"
    r"landline|home|office)s?)"
    r"(?! (?:the|a|an|this|that|it|some|those|these)\b)"
)
_WHO_ES = (
    r"(?:alguien|alguno|alguna|una persona|un humano|un asesor|una asesora|un agente|un ejecutivo|"
    r"una ejecutiva|ustedes|usted|el encargado|la encargada|el gerente|la gerente)"
    r"(?: de (?:ustedes|su equipo|la empresa|la tienda|\w+)| del \w+)?"
)
_CALL_ES = r"(?:llamar|marcar|contactar|hablar|telefonear|escribir|devolver)"
_CLITIC = r"(?:me|le|la|lo|les|las|los|nos)"
_SUBJ_CALL_ES = (
    r"(?:llame|llamen|marque|marquen|contacte|contacten|hable|hablen|escriba|escriban|busque|"
    r"busquen|atienda|atiendan|responda|respondan|conteste|contesten|devuelva la llamada)"
)

DELEGATION: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # bring a person in
        (
            r"\b(?:loop|bring|pull|rope) in (?:a |an |the |some |your |one of your )?"
            rf"(?:real |live |actual |human )?{_ROLE_EN}\b|"
            r"\b(?:loop|bring|pull|rope|get) (?:a |an |the |some |your )?(?:real |live |actual )?"
            r"(?:person|human|manager|supervisor|someone|somebody|agent|rep|boss) "
            r"(?:involved|into this|into the (?:chat|conversation))\b|"
            r"\b(?:loop|bring|pull|rope) (?:a |an |the |some |your )?(?:real |live |actual )?"
            r"(?:person|human|manager|supervisor|someone|somebody|agent|rep|boss) in\b"
        ),
        (
            r"\b(?:(?:escalar|escala|escalen|escale) (?:esto|esta queja|este caso|mi caso|el caso|"
            r"mi queja|mi reclamo|el tema|este tema|mi ticket|el problema)|escalarlo|escalarla|"
            rf"escalalo|escalenlo|escalelo) (?:con|a|al|ala|hacia) {_OBJ_ES}|"
            r"\b(?:escalar|escalen|escale|escala|escalemos) (?:mi|el|este|esta|nuestro) "
            r"(?:caso|reclamo|queja|ticket|reporte|problema)\b|"
            rf"\bse (?:escale|escalen|escala|escalara) (?:a|al|ala|con) {_OBJ_ES}|"
            r"\b(?:escalate|escalated|escalating) (?:this |it |my case |my complaint )?to "
            r"(?:a |an |the |your |someone|somebody|anyone|higher|management)"
        ),
        # a person put on the case: "get a human on this", "let a person handle this"
        (
            r"\b(?:put|get|have|need|want) (?:a |an |the |some |your )?(?:real |live |actual )?"
            r"(?:human|person|manager|supervisor|someone|somebody|agent|rep) on (?:this|it|my case|"
            r"the case|my account|my issue)\b|"
            r"\b(?:let|have|can|could|need|want|get) (?:a |an |some )?(?:real |live |actual )?"
            r"(?:human|person|manager|supervisor) (?:to )?(?:(?:handle|look at|review|deal with|"
            r"take care of|take over|sort out|sort) (?:this|it|that|my)\b|take a look\b)|"
            r"\ben (?:las )?manos de (?:una persona|un humano|alguien|un asesor|una asesora|"
            r"un agente|un supervisor|gente)\b|"
            r"\bque (?:esto |eso |lo |la |mi caso )?(?:lo |la )?(?:vea|revise|atienda|maneje|"
            r"resuelva) (?:alguien|una persona|un humano|un supervisor|un gerente|"
            r"un asesor|una asesora|el encargado|la encargada)\b"
        ),
        # relayed through the bot
        (
            r"\b(?:dile|digale|diganle|decile|avisale|avisele|avisenle|pidele|pidale|pidanle|"
            rf"comentale|comentele|comentenle) (?:a |al |a la )?{_OBJ_ES}(?: \w+){{0,3}} que "
            rf"(?:me|nos) {_SUBJ_CALL_ES}\b"
        ),
        (
            r"\b(?:tell|ask|get|have) (?:your|the) (?:\w+ )?(?:boss|manager|supervisor|owner|"
            r"director|team|staff|people|doctor|dentist|agent|rep|lead|head) (?:to )?"
            rf"{_ACT_EN} {_THEM_EN}"
        ),
        # a person on the phone
        (
            r"\b(?:want|need|like|prefer|get|put|have|rather) (?:\w+ ){0,2}(?:someone|somebody|"
            r"a person|a human|a real person|an agent|a rep|anyone) (?:real )?on the "
            r"(?:phone|line)\b|"
            r"\b(?:quiero|necesito|ocupo|prefiero|quisiera) (?:\w+ ){0,2}(?:alguien|una persona|"
            r"un humano|un asesor|un agente) (?:real )?(?:al|en el|por) (?:telefono|celular|cel)\b"
        ),
        # who at the company
        (
            r"\bwho (?:\w+ ){0,4}(?:can|could|do|should|may) i (?:actually |really |even )?"
            r"(?:speak|talk|chat)(?: to| with)?\b|"
            r"\bcon quien (?:puedo|podria|debo|tengo que|se puede) (?:ver|checar|revisar|arreglar|"
            r"resolver|aclarar|consultar|tratar) (?:lo de|lo del|el tema|esto|eso|mi|mis)\b"
        ),
    )
)

# A call-back for the customer or SOMEONE ELSE ("¿puede alguien llamarle a mi papá?", "can
# someone ring my dad"): the relative is who the call is for, so the phrase layer checks these
# without the "talks about a relative" context (like `person_lexicon.STRONG`).
CALL_FOR: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"\b(?:can|could|would) {_WHO_EN} (?:please )?{_ACT_EN} {_THEM_EN}|"
        rf"\b(?:puede|pueden|podria|podrian|podrias|puedes|podes) {_WHO_ES} "
        rf"{_CALL_ES}{_CLITIC}\b|"
        rf"\b{_WHO_ES} (?:puede|pueden|podria|podrian) {_CALL_ES}{_CLITIC}\b|"
        rf"\bque (?:alguien|una persona|un asesor|un agente|ustedes)(?: \w+){{0,3}} "
        rf"(?:le|la|lo|les) {_SUBJ_CALL_ES}\b|"
        rf"\b(?:can|could|would) {_WHO_EN} (?:please )?give (?:me|us|him|her|them|my \w+) "
        r"a (?:call|ring|buzz)\b|"
        rf"\b(?:have|get|ask|tell|need|want) {_WHO_EN}(?: \w+){{0,3}} (?:to )?{_ACT_EN} "
        rf"{_THEM_EN}|"
        r"(?<!no )(?<!nunca )(?<!jamas )\b(?:llamen|llame|llamale|llamenle|marquen|marque|"
        r"marcale|marquenle|contacten|contacte|contactale) (?:a|al) (?:mi|mis) \w+"
    ),
)

_BOT = r"(?:a |an |the |this |your |some )?(?:bot|bots|ai|robot|robots|machine|chatbot|automated)"
REFUSE: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"\bnot interested in (?:chatting|talking|speaking|texting) (?:to|with) "
        rf"{_BOT}\b|\bno me interesa (?:hablar|platicar|chatear|conversar) con "
        r"(?:un |una |el |la |este |esta )?(?:bot|robot|maquina|ia|chatbot|programa)\b"
    ),
)

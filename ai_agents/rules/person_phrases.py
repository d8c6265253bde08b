"""Layer 1 of the request-for-a-person detector: normalised phrase rules with negative context.

`phrase_layer(text)` -> `PhraseVerdict(verdict, detail)`, `verdict` one of:

- "request": a clause asks to be put through to, spoken to, called back or attended by a
  person (any person, a role such as "el encargado" / "billing", or a named one: "¿me pasas
  con Mariana?"), in Spanish (MX/ES/LatAm, tú/usted/vos) or English; `detail` is the phrase;
- "not": every cue of a person in the message sits in a negative context (a price per person,
  "persona física/moral", a shipping/customs/insurance/travel agent, a person the customer talks
  ABOUT, "humano" in a general remark, a quote of what someone said, a negated request);
  `detail` names the context;
- "unsure": a cue of a person or contact is left unexplained (layer 2 looks at it);
- "none": nothing in the message is about a person or a contact.

The text is split into clauses (sentence punctuation, commas), each normalised with
`text.normalize` (case, accents, punctuation) after common typos and chat spellings are
corrected word by word (`person_lexicon.TYPOS`); quoted words someone else said are dropped
first (`person_frames.unquote`). The request patterns are `person_lexicon.REQUESTS` and the
open-object contact frames of `person_frames.FRAMES` and the delegation frames of
`person_delegation` ("loop in a person", "dile a tu jefe que me escriba"). A request found in
a clause counts unless that clause carries a negative context (`person_lexicon.BLOCKERS`) or a
negation right before it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from ai_agents.rules import person_lexicon as lex
from ai_agents.rules.person_delegation import CALL_FOR, DELEGATION, REFUSE
from ai_agents.rules.person_frames import BLOCKER_FRAMES, FRAMES, STRONG_FRAMES, unquote
from ai_agents.rules.text import normalize

Verdict = Literal["request", "not", "unsure", "none"]

_CLAUSE = re.compile(r"[.;!?¿¡\n,:()\[\]]+|\s[-–—]\s")
# A capitalised word (a name) after "con"/"with"/"to" in the ORIGINAL text.
_NAME = re.compile(
    r"\b(?:con|with|to|a)\s+(?:(?:el|la|the|mr|mrs|ms|sr|sra|srita|se[ñn]or|se[ñn]ora|lic|dr|dra|"
    r"ing|doctor|doctora|licenciad[oa])\.?\s+)?([A-ZÁÉÍÓÚÑ][A-Za-zÁÉÍÓÚÑáéíóúñü]+)"
)
_NEGATION = re.compile(
    r"\b(?:no|nunca|jamas|ni|dont|don t|didn t|doesn t|do not|not|never|without|sin|tampoco)\b"
)
_REPEATS = re.compile(r"([a-z])\1{2,}")  # "holaaa" -> "hola"


@dataclass(frozen=True)
class PhraseVerdict:
    verdict: Verdict
    detail: str = ""


def _fix_word(word: str) -> str:
    """A known typo corrected; a letter repeated for emphasis kept once; a role word with its
    last letter doubled ("asesorr") restored."""
    word = _REPEATS.sub(r"\1", word)
    if word in lex.TYPOS:
        return lex.TYPOS[word]
    if len(word) > 4 and word[-1] == word[-2] and word[:-1] in lex.CUES:
        return word[:-1]
    return word


def _fix_typos(clause: str) -> str:
    return " ".join(_fix_word(word) for word in clause.split())


@functools.lru_cache(maxsize=256)
def clauses(text: str) -> tuple[tuple[str, str], ...]:
    """(original, normalised) clauses of `text`, typos corrected. Cached: the phrase rules and
    the learned layer's word features split the same message."""
    out = []
    for part in _CLAUSE.split(unquote(text or "")):
        normal = _fix_typos(normalize(part))
        if normal:
            out.append((part, normal))
    return tuple(out)


def _names(original: str) -> set[str]:
    """Capitalised words after con/with/to (a named person), normalised; none in ALL CAPS
    text unless preceded by a title."""
    found = {normalize(m.group(1)) for m in _NAME.finditer(original)}
    return {name for name in found if name not in lex.NOT_NAMES}


def _with_names(pattern: re.Pattern[str], clause: str, names: set[str]) -> re.Match[str] | None:
    """`pattern` on the clause, the named persons replaced by the role word "persona"."""
    if names:
        clause = " ".join("persona" if w in names else w for w in clause.split())
    return pattern.search(clause)


def _negated(normal: str, start: int) -> bool:
    """A negation among the three words before the match (not when the request is "not a
    bot": "no quiero hablar con un robot" is caught by its own rule first)."""
    before = normal[:start].split()[-3:]
    return bool(_NEGATION.search(" ".join(before)))


def _blocker(normal: str, *, skip: str = "") -> str | None:
    for name, pattern in (*lex.BLOCKERS, *BLOCKER_FRAMES):
        if name != skip and pattern.search(f" {normal} "):
            return name
    return None


def _clause_request(original: str, normal: str) -> tuple[str | None, str | None]:
    """(the request phrase, None) or (None, the negative context that cancelled one)."""
    names = _names(original)
    # "not a bot" kinds: a negation is part of the request
    for pattern in (*lex.STRONG, *STRONG_FRAMES, *REFUSE, *CALL_FOR):
        match = pattern.search(normal)
        if match:  # "the one who helped me" is who they ask for, not a mention
            blocked = _blocker(normal, skip="talks_about")
            return (None, blocked) if blocked else (match.group(0), None)
    for pattern in (*lex.REQUESTS, *FRAMES, *DELEGATION):
        match = _with_names(pattern, normal, names)
        if match is None:
            continue
        blocked = _blocker(normal)
        if blocked:
            return None, blocked
        if _negated(normal, match.start()):
            return None, "negation"
        return match.group(0), None
    return None, None


@functools.lru_cache(maxsize=2048)
def phrase_layer(text: str) -> PhraseVerdict:
    """The verdict of the phrase rules on `text` (see the module docstring)."""
    parts = clauses(text)
    whole = " ".join(normal for _, normal in parts)
    if lex.ALONE.fullmatch(whole):
        return PhraseVerdict("request", whole)
    contexts: list[str] = []
    for original, normal in parts:
        phrase, blocked = _clause_request(original, normal)
        if phrase:
            return PhraseVerdict("request", phrase)
        if blocked:
            contexts.append(blocked)
    cues = [w for w in whole.split() if w in lex.CUES or w.startswith(lex.CUE_PREFIXES)]
    if contexts:
        return PhraseVerdict("not", contexts[0])
    if not cues:
        return PhraseVerdict("none")
    blocked = _blocker(whole)
    if blocked:
        return PhraseVerdict("not", blocked)
    return PhraseVerdict("unsure", " ".join(cues[:5]))

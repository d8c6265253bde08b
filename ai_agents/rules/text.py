"""Text normalisation and phrase matching for keywords, intents and escalation triggers.

`normalize(text)`: casefold, strip accents (Unicode NFKD, combining marks dropped), keep only
letters and digits (everything else becomes a space), collapse whitespace. "¿Dónde  ESTÁ?" ->
"donde esta".

`contains_phrase(text, phrase, excludes=...)`: case- and accent-insensitive match on WORD
BOUNDARIES. Both sides are normalised and split into words; the phrase (one or more words, e.g.
"hablar con un humano") must appear as a contiguous run of whole words. Substrings never fire:
"agente" does not match "agentes" nor "reagente".

Exclusions: a match does not count when it lies inside (or overlaps) an occurrence of one of
the `excludes` phrases in the same text. With the keyword "agente" and the exclude
"agente de envíos":
- "quiero un agente" fires;
- "¿cuánto cobra el agente de envíos?" does not;
- "el agente de envíos no llegó, quiero un agente" fires (second occurrence is clear).
Overlap counts too: "hablar con un agente" does not fire on "hablar con un agente de seguros"
when "agente de seguros" is excluded. This is how the rule "'agente de envíos' must not read as
'agente'" is implemented: the built-in Spanish defaults for the human-agent request
(`HUMAN_AGENT_EXCLUDES`) carry such exclusions, and every configured trigger or intent can add
its own `exclude` list.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence

_NON_WORD = re.compile(r"[^0-9a-z]+")

# Phrases where "agente" (or "persona") names a trade, not a human to talk to.
HUMAN_AGENT_EXCLUDES: tuple[str, ...] = (
    "agente de envios",
    "agente de envio",
    "agente de ventas",
    "agente de viajes",
    "agente inmobiliario",
    "agente inmobiliaria",
    "agente aduanal",
    "agente aduanero",
    "agente de aduanas",
    "agente de seguros",
    "agente de bienes raices",
    "agente de transito",
    "agente de policia",
    "agente de carga",
    "agente comercial",
    "agente de cambio",
    "persona fisica",
    "persona moral",
    "persona juridica",
)


@functools.lru_cache(maxsize=1024)
def normalize(text: str) -> str:
    """Casefolded, accent-free, letters/digits only, single spaces, stripped. Cached: the
    rules of one message normalise the same texts (the message, the history's) many times,
    and the next message of the conversation has the same history."""
    if not text:
        return ""
    folded = text.casefold()
    if folded.isascii():  # nothing to decompose: NFKD and the accent strip leave it as is
        return _NON_WORD.sub(" ", folded).strip()
    decomposed = unicodedata.normalize("NFKD", folded)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _NON_WORD.sub(" ", stripped).strip()


def words(text: str) -> list[str]:
    """The normalised words of `text`."""
    return list(_words(text))


@functools.lru_cache(maxsize=1024)
def _words(text: str) -> tuple[str, ...]:
    # One message is matched against every trigger and intent phrase (~100 calls): its words
    # and the phrases' are computed once.
    normalized = normalize(text)
    return tuple(normalized.split()) if normalized else ()


def _spans(haystack: Sequence[str], needle: Sequence[str]) -> list[tuple[int, int]]:
    size = len(needle)
    if not size or size > len(haystack):
        return []
    return [
        (start, start + size)
        for start in range(len(haystack) - size + 1)
        if haystack[start : start + size] == needle
    ]


def contains_phrase(text: str, phrase: str, *, excludes: Iterable[str] = ()) -> bool:
    """True when `phrase` occurs in `text` on word boundaries, clear of every `excludes` phrase."""
    haystack = _words(text)
    matches = _spans(haystack, _words(phrase))
    if not matches:
        return False
    blocked = [span for exclude in excludes for span in _spans(haystack, _words(exclude))]
    return any(
        not any(b_start < end and start < b_end for b_start, b_end in blocked)
        for start, end in matches
    )


def first_matching_phrase(
    text: str, phrases: Iterable[str], *, excludes: Iterable[str] = ()
) -> str | None:
    """The first of `phrases` that `contains_phrase` finds in `text`, or None."""
    excludes = tuple(excludes)
    for phrase in phrases:
        if contains_phrase(text, phrase, excludes=excludes):
            return phrase
    return None

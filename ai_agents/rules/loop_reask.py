"""The customer asking the same thing again in OTHER words, with no marker, after the
assistant went round: `reasked(text, earlier_user_texts, assistant_texts)`.

Cheap and lexical (no embedding: the earlier turns' vectors are not at hand in the time
budget). It holds when all of these do:

- the assistant answered at least twice and its last two answers are (nearly) the same
  content: at least `MIN_ANSWER_CONTENT` content words each and `REPEAT` of the shorter one's
  stemmed content words in the other ("Los reembolsos se procesan en 5 a 10 días hábiles." /
  "Los reembolsos tardan entre 5 y 10 días hábiles.");
- the last answer did not take up what the customer said just before it: at most `COVERED`
  of the customer's content words are in it ("¿se puede vivir ahí con un gato?" answered
  with the rooms and the balcony);
- the current message asks again: a "?", an accented question word ("cuánto sale...") or a
  question word heading a clause ("... donde esta mi dinero", "... is the flight on").

Not when the last answer asked the customer for data (a number, a name, a confirmation): the
message answers it. A new question after a good answer (the answer took up the customer's
words), "ok" or "gracias" after two similar answers (no question), and a follow-up after two
DIFFERENT answers are no loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ai_agents.rules.loop_markers import content_stems

REPEAT = 0.75  # shared stems / the shorter answer's stems, for two answers to be the same
COVERED = 0.5  # the customer's stems in the last answer, at most, for it to be unanswered
MIN_ANSWER_CONTENT = 3  # content words of an answer at least ("$39 al mes." is too short)
_ASKS = re.compile(
    r"\?|\b(?:qué|cuándo|cuánto|cuánta|cuántos|cuántas|dónde|cómo|cuál|cuáles|quién)\b|"
    r"(?:^|[.,;:!]\s*)(?:donde|cuando|cuanto|cuanta|cuantos|cual|what|when|where|how|"
    r"which|is|are|can|could|do|does|did|will|would|should)\b",
    re.IGNORECASE,
)

# The assistant asking the customer for data (a number, a name, an e-mail) or to confirm it:
# the customer's next message answers that, it is no re-ask even when it also asks.
_ASKS_FOR_DATA = re.compile(
    r"\b(?:tu|su|your) (?:numero|número|nombre|correo|e-?mail|folio|n[uú]mero de \w+|"
    r"number|name|order number|reference|referencia|telefono|teléfono|phone)\b|"
    r"\b(?:confirm|confirma|confirme|confirmas|confirmar|verify|verifica|verifique)",
    re.IGNORECASE,
)


def _repeat(a: dict[str, str], b: dict[str, str]) -> bool:
    if min(len(a), len(b)) < MIN_ANSWER_CONTENT:
        return False
    return len(a.keys() & b.keys()) >= REPEAT * min(len(a), len(b))


def reasked(
    text: str, earlier_user_texts: Sequence[str], assistant_texts: Sequence[str]
) -> str | None:
    """The customer's last earlier message when this one asks it again after two (nearly)
    equal answers that did not take it up (see the module docstring), or None."""
    if len(assistant_texts) < 2 or not earlier_user_texts or not _ASKS.search(text or ""):
        return None
    if _ASKS_FOR_DATA.search(assistant_texts[-1]):
        return None
    last, before = content_stems(assistant_texts[-1]), content_stems(assistant_texts[-2])
    if not _repeat(last, before):
        return None
    asked = content_stems(earlier_user_texts[-1])
    if asked and sum(_taken_up(stem, last) for stem in asked) > COVERED * len(asked):
        return None
    return earlier_user_texts[-1]


def _taken_up(stem: str, answer: dict[str, str]) -> bool:
    """The answer has the customer's word or its plural ("cat" / "cats", "gato" / "gatos")."""
    return stem in answer or any(other.startswith(stem) for other in answer if len(stem) >= 3)

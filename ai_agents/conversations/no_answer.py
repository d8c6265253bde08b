"""When the bot does not know: which passages the offline answer may quote, what the model is
told, and the `no_answer` outcome recorded on the reply.

`metadata["outcome"] = "no_answer"` on an assistant message means the bot did not have the
information asked for (the statistics count "unanswered questions" from it). It is set when:
- the model's JSON answer has `no_answer: true` (a boolean field of the action schema,
  constrained decoding: the most robust signal, no parsing of free text); the offline
  provider sets it when it refuses for lack of a confident passage;
- or, as a fallback for a model that ignores the field, the answer contains the fixed
  no-information sentence the prompt asks for (Spanish or English).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, override

from ai_agents.knowledge.confidence import confident
from ai_agents.selectors.knowledge import SearchHit
from erp.llm.actions import ParsedAction
from erp.llm.providers.offline import NO_ANSWER_FIELD, NO_INFORMATION

OUTCOME_KEY = "outcome"
NO_ANSWER = "no_answer"

NO_ANSWER_INSTRUCTION = gettext_lazy(
    "Si la Información Relevante no responde la pregunta del cliente, no inventes ni "
    "cites algo que no la responde: di «No tengo esa información; ¿quiere que le pase con "
    "una persona del equipo?» (en el idioma del cliente) y pon no_answer en true."
)


def confident_hits(hits: Sequence[SearchHit], query: str) -> list[SearchHit]:
    """`hits` when retrieval is confident (ai_agents/knowledge/confidence.py), else none."""
    return list(hits) if hits and confident(hits, query) else []


@functools.cache
def _sentences() -> tuple[str, ...]:
    """The sentence in both languages, once per process (the catalogs do not change)."""
    found = []
    for language in ("es", "en"):
        with override(language):
            found.append(_(NO_INFORMATION).split(";")[0].casefold())
    return tuple(found)


def says_no_information(text: str) -> bool:
    """`text` is (or contains) the no-information answer, in Spanish or English."""
    folded = text.casefold()
    return any(sentence in folded for sentence in _sentences())


def is_no_answer(parsed: ParsedAction) -> bool:
    """The model (or the offline provider) said the passages did not answer."""
    flag = parsed.fields.get(NO_ANSWER_FIELD)
    if flag is True:
        return True
    if flag is False or parsed.name != "respond":
        return False
    return says_no_information(parsed.answer)


def note_outcome(meta: dict[str, Any], parsed: ParsedAction) -> None:
    """Records `outcome: no_answer` in the reply's metadata when the answer says so."""
    if is_no_answer(parsed):
        meta[OUTCOME_KEY] = NO_ANSWER

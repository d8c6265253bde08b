"""Unanswered questions grouped by near-duplicates.

The customer messages the bot answered with `outcome: no_answer` are normalised (case, accents,
punctuation: `ai_agents.rules.text.normalize`), reduced to their content words (function words
dropped), each cut to its first `STEM` letters (a crude stem: "envíos" and "envían" meet) and
grouped: the same set of stems is the same question; then a group joins the first larger group
whose stems overlap its own by at least `SIMILAR` (Jaccard). Largest first; the representative
text of a group is its most frequent wording (the earliest on a tie).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ai_agents.rules.text import normalize

SIMILAR = 0.6
STEM = 4
GROUPS_SHOWN = 20
CLUSTERS_MAX = 500  # bounds the pairwise comparisons (rows are capped in SQL too)
EXAMPLES = 3

_FUNCTION_WORD_LIST = (
    "a al algo como con cual de del el en es esta este hay la las le lo los me mi mis no o "
    "para por que quiero se si sobre su sus tienen tiene un una uno y yo usted ustedes puedo "
    "pueden puede hola gracias buenas buenos dias favor "
    "an and any are can could do does for have hello hi how i in is it me my of on or "
    "please the there thanks to what when where which with you your"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORD_LIST.split())


@dataclass
class QuestionGroup:
    question: str
    count: int
    words: frozenset[str]
    examples: list[str] = field(default_factory=list)


def question_key(text: str) -> frozenset[str]:
    """The stems of the content words of a question (normalised; function words dropped)."""
    return frozenset(w[:STEM] for w in normalize(text).split() if w not in _FUNCTION_WORDS)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b)


def questions_group(texts: Iterable[str]) -> list[QuestionGroup]:
    """The `GROUPS_SHOWN` largest groups of near-duplicate questions, largest first."""
    return questions_group_counted((text, 1) for text in texts)


def questions_group_counted(counted: Iterable[tuple[str, int]]) -> list[QuestionGroup]:
    """`questions_group` of texts already counted: (text, times asked), in the order each
    text was first asked (the statistics statement counts identical texts in SQL)."""
    wordings: dict[frozenset[str], Counter[str]] = {}
    for text, times in counted:
        clean = " ".join(text.split())
        key = question_key(clean)
        if key:
            wordings.setdefault(key, Counter())[clean] += times
    exact = sorted(
        wordings.items(), key=lambda item: (-sum(item[1].values()), item[1].most_common(1)[0][0])
    )
    clusters: list[QuestionGroup] = []
    for key, counter in exact:
        count = sum(counter.values())
        target = next((c for c in clusters if _overlap(c.words, key) >= SIMILAR), None)
        if target is None:
            if len(clusters) >= CLUSTERS_MAX:
                continue
            clusters.append(QuestionGroup(counter.most_common(1)[0][0], count, key))
            target = clusters[-1]
            others = [text for text, _n in counter.most_common(EXAMPLES + 1)[1:]]
        else:
            target.count += count
            others = [text for text, _n in counter.most_common(EXAMPLES)]
        room = EXAMPLES - len(target.examples)
        target.examples.extend(others[:room])
    clusters.sort(key=lambda c: (-c.count, c.question))
    return clusters[:GROUPS_SHOWN]

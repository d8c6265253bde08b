"""Loop detection (the `loop_detection` trigger, on by default): a conversation going round in
circles is a reason to offer a person, not to keep answering.

`loop_detail(text, ...)` gives the detail of the first loop found, or None:

- the customer sends the same message again: normalised equal or token Jaccard >=
  `similarity` (a typo of a word counts as the word), at least `min_words` words (so
  "sí" or "gracias" twice is no loop), `max_similar` times in the last `window` messages, the
  current one included;
- the customer says they are repeating themselves ("se lo he dicho ya varias veces", "ya te lo
  dije", "te repito", "Otra vez: ...", "I've asked this three times": `loop_markers.complaint`);
- the same reference (an order number or code with 4+ digits, an e-mail address) the customer
  already gave twice, or once when the message is little more than the reference again
  (not when the assistant just asked to confirm it: `_CONFIRM`);
- the customer restating the same thing in other words after two answers
  (`loop_markers.restated`);
- the assistant's last two answers are (nearly) the same;
- the customer asking again, in other words, what two similar answers did not take up
  (`loop_reask.reasked`);
- with `vector_of` (query vectors): the same asked again in other words, by meaning, after
  answers that did not take it up (`loop_semantic.reasked_by_meaning`);

and `answer_repeats(answer, assistant_texts)`: a new answer (nearly) equal to the previous one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from django.utils.translation import gettext_noop

from ai_agents.rules.detail import detail
from ai_agents.rules.loop_markers import complaint, refocus, restated
from ai_agents.rules.loop_reask import reasked
from ai_agents.rules.loop_semantic import VectorOf, reasked_by_meaning
from ai_agents.rules.text import normalize, words

_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")  # bounded: no n² scan
_CODE = re.compile(r"\b[a-z]*\d[\w-]*\b")
MIN_ANSWER_WORDS = 3
FUZZY_PAIRS = 900  # word pairs compared for typos at most (two 30-word messages)


def _close(word: str, others: set[str], *, fuzzy: bool) -> bool:
    """`word` in `others`, or (`fuzzy`) a typo of one of them: 4 to 24 letters, lengths within
    two, ratio >= 0.8 (bounded: a 4,000-character message costs no quadratic comparison)."""
    if word in others:
        return True
    if not fuzzy or not 4 <= len(word) <= 24:
        return False
    return any(abs(len(o) - len(word)) <= 2 and _typo(word, o) for o in others)


def _typo(word: str, other: str) -> bool:
    """SequenceMatcher ratio >= 0.8, its cheap upper bounds first (difflib's own idiom)."""
    matcher = difflib.SequenceMatcher(None, word, other)
    return (
        matcher.real_quick_ratio() >= 0.8
        and matcher.quick_ratio() >= 0.8
        and matcher.ratio() >= 0.8
    )


def similar(a: str, b: str, *, similarity: float = 0.8) -> bool:
    """Same normalised text, or a token-set Jaccard >= similarity where a word counts as
    shared when the other message has it or a typo of it ("pedido" / "pedidio"; "plan a" and
    "plan b" stay different)."""
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    sa, sb = set(na.split()), set(nb.split())
    fuzzy = len(sa) * len(sb) <= FUZZY_PAIRS
    exact = len(sa & sb)
    # The words that may be typos of one of the other message's (`_close`: 4 to 24 letters).
    rest = [w for w in sa if w not in sb and 4 <= len(w) <= 24] if fuzzy else []
    # The ratio grows with the shared words: when even all of `rest` being typos would not
    # reach `similarity`, no typo is looked for.
    most = exact + len(rest)
    if most / (len(sa) + len(sb) - most) < similarity:
        return False
    shared = exact + sum(_close(w, sb, fuzzy=True) for w in rest)
    return shared / (len(sa) + len(sb) - shared) >= similarity


def references(text: str) -> set[str]:
    """Order numbers, codes (4+ digits) and e-mail addresses in `text`, normalised."""
    text = (text or "").lower()
    found = {m.group(0) for m in _EMAIL.finditer(text)} if "@" in text else set()
    rest = _EMAIL.sub(" ", text) if found else text
    for match in _CODE.finditer(rest):
        digits = re.sub(r"\D", "", match.group(0))
        if len(digits) >= 4:
            found.add(digits)
    return found


# The assistant asking the customer to confirm or check what they gave: the reference sent
# again is the answer asked for, not the customer going round ("¿Me lo confirmas de nuevo?").
_CONFIRM = re.compile(
    r"\b(?:confirm|confirma|confirme|confirmen|confirmas|confirmar|confirmarme|verifica|verifique|"
    r"verificar|verifiques|double check|verify|comprueba|compruebe|corrobora|corrobore)"
)


def _repeated_reference(
    text: str, recent_user_texts: Sequence[str], assistant_texts: Sequence[str] = ()
) -> str | None:
    asked = bool(assistant_texts) and _CONFIRM.search(normalize(assistant_texts[-1])) is not None
    for ref in sorted(references(text)):
        earlier = sum(ref in references(t) for t in recent_user_texts)
        others = [w for w in words(text) if w not in normalize(ref).split()]
        if earlier >= 2 or (earlier == 1 and len(others) <= 2 and not asked):
            return ref
    return None


def answer_repeats(answer: str, assistant_texts: Sequence[str]) -> bool:
    """`answer` (nearly) the same as the previous assistant answer."""
    if not assistant_texts or len(words(answer)) < MIN_ANSWER_WORDS:
        return False
    return similar(answer, assistant_texts[-1], similarity=0.9)


def loop_detail(
    text: str,
    *,
    recent_user_texts: Sequence[str],
    assistant_texts: Sequence[str] = (),
    max_similar: int = 2,
    window: int = 10,
    similarity: float = 0.8,
    min_words: int = 3,
    vector_of: VectorOf | None = None,
) -> str | None:
    """Why this turn is a loop (see the module docstring), or None."""
    if len(words(text)) >= max(1, min_words):
        earlier = list(recent_user_texts)[-window:]
        count = 1 + sum(similar(text, t, similarity=similarity) for t in earlier)
        if count >= max_similar:
            return detail(gettext_noop("el mismo mensaje %(n)s veces"), n=count)
    said = complaint(text, answered=bool(assistant_texts)) or (
        refocus(text, recent_user_texts[-window:]) if assistant_texts else None
    )
    if said:
        return detail(gettext_noop("el cliente dice que se repite («%(p)s»)"), p=said)
    ref = _repeated_reference(text, recent_user_texts[-window:], assistant_texts)
    if ref:
        return detail(gettext_noop("el cliente repite la referencia «%(r)s»"), r=ref)
    again = restated(text, recent_user_texts[-window:], assistant_texts)
    if again:
        return detail(gettext_noop("el cliente vuelve a plantear lo mismo («%(w)s»)"), w=again)
    if len(assistant_texts) >= 2 and answer_repeats(assistant_texts[-1], assistant_texts[:-1]):
        return detail(gettext_noop("el asistente dio la misma respuesta dos veces"))
    if reasked(text, recent_user_texts[-window:], assistant_texts):
        return detail(gettext_noop("el cliente vuelve a preguntar lo que no se le respondió"))
    return _by_meaning(text, recent_user_texts[-window:], assistant_texts, vector_of)


def _by_meaning(
    text: str,
    recent_user_texts: Sequence[str],
    assistant_texts: Sequence[str],
    vector_of: VectorOf | None,
) -> str | None:
    if vector_of is None:
        return None
    score = reasked_by_meaning(
        text,
        recent_user_texts=recent_user_texts,
        assistant_texts=assistant_texts,
        vector_of=vector_of,
    )
    if score is None:
        return None
    return detail(
        gettext_noop("el cliente vuelve a preguntar, con otras palabras, lo mismo (p %(p).2f)"),
        p=score,
    )

"""A customer's language (Spanish or English) guessed from what they wrote: function words
counted, no model. Used where an answer is written without a language model (the offline
provider, the rules' fixed replies). Undecided (too short, a name, "ok") -> the default."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_WORD = re.compile(r"[a-z']+")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


SPANISH = _set(
    """a al algo alguien aqui asi cual cuales cuando cuanto cuanta cuantos cuantas como con de
    del donde el ella ellos en es esa ese eso esta este esto estan estoy gracias hay hola
    la las le les lo los me mi mis mucho muy nada necesito no nos nosotros o para pero por
    porque puedo puede pueden que quiero quien se si sin sobre son su sus tambien tengo
    tiene tienen tu tus un una uno unos usted ustedes y ya yo venden hacen abren dame
    quisiera favor buenas buenos dias tardes noches bueno claro vale gustaria saber"""
)
ENGLISH = _set(
    """a about am an and any are at be but can could did do does for from have hello hi how i
    i'm if in is it it's me my need no not of on or please so that the there this to want
    was we what when where which who why will with would you your thanks thank sell open
    yes yeah good like know tell give get sure okay"""
)
_SHARED = SPANISH & ENGLISH  # "a", "no": no evidence either way


def _words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(c for c in plain if not unicodedata.combining(c)).replace("’", "'")
    return _WORD.findall(plain)


def guess_language(text: str) -> str | None:
    """ "es", "en", or None when the text gives no evidence either way."""
    words = [w for w in _words(text) if w not in _SHARED]
    spanish = sum(w in SPANISH for w in words) + 2 * bool(re.search(r"[¿¡ñ]", text))
    english = sum(w in ENGLISH for w in words)
    if spanish == english:
        return None
    return "es" if spanish > english else "en"


def customer_language(texts: Iterable[str], default: str = "es") -> str:
    """The language of the latest text that shows one (`texts` newest first), or `default`."""
    for text in texts:
        found = guess_language(text)
        if found is not None:
            return found
    return default if default in ("es", "en") else "es"

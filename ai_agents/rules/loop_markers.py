"""What makes a customer message a conversation loop beyond a message sent twice
(`loops.loop_detail` uses these):

- `complaint(text)`: the customer says they are repeating themselves, in any of the usual
  forms: "ya se lo he dicho", "le he dicho varias veces", "te repito", "por cuarta vez:",
  "Otra vez: ¿...?", "I've asked this three times", "i've said this like 4 times", "Again: ...",
  "as I said". An ordinal ("es la segunda vez que...") counts only when what repeats is the
  asking or telling ("es la tercera vez que lo pregunto"), or the ordinal heads the message
  ("Por cuarta vez: ..."): "es la segunda vez que me llega incompleto" is a first complaint
  about a repeated PROBLEM, not a conversation going round;
- after an answer (`complaint(..., answered=True)`), `AFTER_ANSWER` too: the count of askings
  ("I'm asking X, for the second time"), "same question", "no me contestas/respondes", "you're
  not answering", "te lo dije", "ya se la di", "that's what you said last time";
- `refocus(text, earlier_user_texts)`: after an answer, "te estoy preguntando...", "I'm asking
  about...", "simple question", "solo quiero saber..." when the message repeats a content word
  the customer already asked about (a NEW question put so is no loop);
- `restated(text, earlier_user_texts, assistant_texts)`: the customer says the same thing
  again in other words after the assistant answered at least twice: most of the message's
  content words (stemmed) were already in the customer's earlier messages and the message is
  still unhappy (a negation, "!!", "??", a word in capitals), or the problem is said to persist
  ("sigo sin", "still", "sigue igual") over what they already said. A follow-up question on the
  same product ("¿y los zapatos negros talla 27 tienen envío gratis?") is neither. A SHORT
  message (at most `SHORT` content words), shouted or telegraphic ("FECHA. CUÁNDO.", "Y MI
  REEMBOLSO??", "ugh. deposit. back. when."), all of whose content words the customer already
  said, is a restatement too when it asks again or is impatient (a "?", a question word, "ya",
  "now", a negation): "EL AZUL!!" (a choice) is not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from ai_agents.rules.text import normalize

_TELL = (
    r"(?:dicho|repetido|explicado|escrito|preguntado|pedido|comentado|mencionado|aclarado|"
    r"reclamado|avisado|contado|mandado|enviado)"
)
_TOLD = r"(?:dije|pregunte|escribi|explique|pedi|comente|mencione|aclare|reclame|avise|repeti)"
_TIMES = r"(?:varias|muchas|mil|cien|tantas|dos|tres|cuatro|cinco|seis|\d+) veces"
_ORDINAL = r"(?:segunda|tercera|cuarta|quinta|sexta|enesima|milesima|\d+a?)"
_ORDINAL_EN = r"(?:second|third|fourth|fifth|sixth|umpteenth|nth|\d+(?:st|nd|rd|th)?)"
_SAY_ES = (
    r"(?:digo|pregunto|escribo|pido|repito|explico|reclamo|comento|aviso|llamo|contacto|"
    r"mando|consulto|insisto|reporto|escribimos|preguntamos|decimos|pedimos)"
)
_SAY_EN = r"(?:asking|telling|writing|saying|explaining|reporting|contacting|messaging|asked)"
COMPLAINT = re.compile(
    r"\b(?:(?:ya )?(?:se|te|le|os|les) (?:lo |la )?(?:he|hemos|habia|habiamos) "
    rf"(?:\w+ )?{_TELL}|ya (?:te|le|os|les|se) (?:lo |la )?(?:{_TOLD}|habia dicho)(?! a )|"
    rf"(?:{_TELL}|{_TOLD}) (?:ya |esto |eso |lo )?(?:como )?{_TIMES}|"
    r"(?:te|se|le|os|les) lo repito|(?:te|le|os|les) repito|repito (?:otra vez|de nuevo)|"
    r"(?:otra vez|de nuevo|nuevamente|una vez mas) (?:te|le|os|les|se) (?:lo )?"
    r"(?:digo|pregunto|repito|escribo|explico|pido)|(?:te|le|os|les) (?:lo )?(?:digo|pregunto) "
    r"(?:otra vez|de nuevo|nuevamente|una vez mas)|"
    r"(?<!no )(?<!nunca )(?<!jamas )(?:(?:te|le|os|les|se) )?(?:lo )?vuelvo a "
    r"(?:repetir|decir|preguntar|escribir|explicar|"
    r"pedir|reclamar)|"
    r"(?:otra|una) vez (?:mas )?la misma|otra vez lo mismo|"
    # "te lo pregunto por enésima vez", "for the umpteenth time": the ordinal mid-sentence
    r"(?:por|x) (?:la )?(?:enesima|milesima|centesima|n) vez|"
    r"(?:digo|pregunto|escribo|repito|explico|reclamo|comento|insisto|reporto|preguntamos) "
    rf"(?:\w+ ){{0,2}}por (?:la )?{_ORDINAL} vez|"
    r"for the (?:umpteenth|nth|hundredth|millionth|thousandth) time|"
    r"(?:la misma|lo mismo) (?:respuesta|cosa) (?:otra vez|de nuevo)|"
    rf"(?:es|por) (?:la )?{_ORDINAL} vez (?:que )?(?:te |le |se |os |les |lo |la |ya )*"
    rf"(?:lo |la )?{_SAY_ES}|"
    r"cuantas veces (?:mas )?(?:te|se|le|os|les|tengo|voy|hay)|varias veces (?:ya|lo)|"
    r"me (?:sigues|sigue|siguen) (?:diciendo|respondiendo|contestando|repitiendo)|"
    r"(?:estamos|seguimos) (?:dando vueltas|en lo mismo|en circulos)|me repites|"
    r"repites lo mismo|como (?:ya )?(?:te|le|os|les) (?:dije|he dicho|comente|explique)|"
    r"i (?:already|have already|ve already) (?:told|said|explained|wrote|asked) "
    r"(?:you|ya|u|this|that|it|so)\b|"
    r"(?:told you|asked|said|explained|written|wrote|mentioned|repeated) "
    r"(?:this |that |it |you |ya |u )?(?:already |like |about |at least |now )*"
    r"(?:twice|(?:two|three|four|five|six|several|many|multiple|\d+) times)|"
    r"told you (?:already|before|twice|three times|several times)|"
    r"i keep (?:asking|telling|saying|explaining|writing)|"
    r"(?:as|like) i (?:already )?(?:said|told you|mentioned|explained)|"
    r"(?:how many|so many) times|"
    rf"(?:for|this is) the {_ORDINAL_EN} time (?:i |im |i m |ive |i ve |i have |i am )"
    rf"(?:been )?{_SAY_EN}|"
    r"you (?:keep|re|are) (?:saying|giving|repeating|sending) (?:me )?the same|"
    r"same (?:answer|reply|response|thing) (?:again|over)|going (?:round )?in circles|"
    r"(?:again and again|over and over)|"
    # the count of askings: "ya van 3 veces", "llevo tres veces", "third time asking"
    rf"(?:ya van|van ya|ya llevo|llevo ya|llevo) (?:como )?{_TIMES}|"
    rf"{_ORDINAL_EN} time (?:asking|i ask|i m asking|im asking|i ve asked|ive asked|"
    r"i have asked|writing|i write|telling you|i m telling you|saying this))\b"
)
# Said after an answer only (a first message "all I'm asking is..." is no loop): the answer
# already given ("eso ya me lo dijiste", "ya me lo dijiste dos veces", "you already told me
# that"), the one thing asked ("es lo único que pregunto", "all I'm asking").
AFTER_ANSWER = re.compile(
    r"\b(?:(?:eso|esto) ya me lo (?:dijiste|dijo|dijeron|has dicho|ha dicho|habias dicho|"
    r"explicaste|explico|respondiste|contestaste)|"
    rf"ya me (?:lo |la )?(?:dijiste|dijo|has dicho|ha dicho|explicaste|respondiste|"
    rf"contestaste) (?:\w+ ){{0,4}}{_TIMES}|"
    r"you (?:already|have already|ve already) (?:told|said|gave|sent) (?:me )?(?:that|this|it)|"
    r"(?:es )?lo unico que (?:te |le |les |os )?(?:pregunto|pido|estoy preguntando|"
    r"quiero saber)|all i (?:m |am )?(?:asking|want to know|asked)(?: for| is)?|"
    # the count of askings anywhere: "I'm asking what X is, for the second time"
    rf"(?:asking|ask|asked|pregunto|preguntando)\b(?: \w+){{0,12}} "
    rf"(?:for the {_ORDINAL_EN} time|por (?:la )?{_ORDINAL} vez)|"
    rf"(?:asking|ask|writing) (?:this |you )?(?:for )?the {_ORDINAL_EN} time|"
    # the same question again: "Same question again:", "es la misma pregunta de hace rato"
    r"(?:same question|misma pregunta)(?! (?:for|about|but|regarding|on|para|sobre|pero|con|en) )|"
    # not answering: "no me contestas lo que pregunto", "no me respondes", "you're not answering"
    r"no (?:me )?(?:contestas|respondes|contestais|respondeis)|"
    r"no (?:me )?(?:contesta|responde|contestan|responden) (?:a )?lo que (?:le |les )?pregunto|"
    r"no me (?:esta|estas|estan) (?:entendiendo|escuchando|leyendo|respondiendo|contestando)|"
    r"(?:you re|youre|you are) not (?:answering|listening|reading)|"
    r"(?:you )?(?:didn t|didnt|did not|don t|dont|never) (?:answer|address) (?:my|the) question|"
    r"(?:doesn t|doesnt|does not) answer my question|"
    # the answer already given, the thing already told: "te lo dije", "ya se la di",
    # "That's what you said last time", "eso mismo me contestaron la semana pasada"
    r"(?<!no )(?:te|se|le|os|les) (?:lo|la|los|las) (?:dije|di|pase|mande|envie|dimos|dijimos)"
    r"(?! a )|"
    r"i (?:already )?(?:gave|sent) (?:it|that|them|this) (?:to you )?(?:already|before)|"
    r"(?:that s|thats|that is) what you (?:said|told me|wrote)|"
    r"eso (?:mismo|ya) (?:ya )?me (?:dijeron|contestaron|respondieron|dijiste|contestaste|"
    r"respondiste|dijo|contesto|respondio)|eso (?:ya )?me (?:dijiste|contestaste|respondiste))\b"
)
# Said after an answer AND about what the customer already asked (`refocus`): the contrastive
# re-focus ("te estoy preguntando si hacen X, no los sabores", "I'm asking about X") and the
# emphatic one thing ("simple question", "solo quiero saber..."). A new question put so
# ("I have a simple question: do you deliver?") shares no content word with the earlier ones.
FOCUS = re.compile(
    r"\b(?:(?:te|le|les|os) estoy (?:preguntando|diciendo|pidiendo)|"
    r"(?:i m|im|i am) asking (?:you )?(?:about|if|whether|what|when|how|for)|"
    r"(?<!have a )(?<!got a )(?<!another )(?<!quick )(?:simple|easy|basic|straightforward) "
    r"question|(?<!tengo una )(?<!otra )pregunta (?:simple|sencilla|facil)|"
    r"(?:solo|solamente|nada mas|unicamente) (?:quiero|queria|necesito) saber)\b"
)
# At the head of the message, before a colon or a dash ("Otra vez: ¿...?", "Again - ...",
# "Por cuarta vez: ..."), on the ORIGINAL text.
HEAD = re.compile(
    r"^\W*(?:otra vez|de nuevo|nuevamente|una vez m[aá]s|otra vez m[aá]s|again|once again|"
    r"one more time|once more|yet again|(?:por|es la|for the|this is the) \w+ (?:vez|time)|repito)"
    r"\s*(?:[:\-–—]|\.\.\.)|"
    # an ordinal heading a question: "por tercera vez, ¿se permiten perros?"
    r"^\W*(?:por (?:la )?(?:segunda|tercera|cuarta|quinta|enésima|enesima)|for the "
    r"(?:second|third|fourth|fifth|umpteenth)) (?:vez|time)\s*,(?=.*\?)",
    re.IGNORECASE,
)
_PERSIST = re.compile(
    r"\b(?:sigo sin|sigue sin|siguen sin|sigue (?:igual|el error|fallando|sin funcionar|mal)|"
    r"todavia no|aun no|aun sigue|sigue sin|continua (?:igual|sin|el)|"
    r"still|keeps? (?:leaking|crashing|failing|happening|saying)|nothing changed|"
    r"no ha cambiado nada|sigue pasando|(?:se )?(?:sigue|siguen|sigo) \w+(?:ando|iendo)|"
    r"keeps? \w+ing|de verdad|en serio|te lo juro|se lo juro|honestly|seriously|i promise)\b"
)
_STOP_WORDS = (
    "el la los las un una unos unas de del al a y o que en con por para mi mis tu "
    "tus su sus me te se le les lo nos os es son esta estan este esto eso ese ya no "
    "si pero como cuando donde porque ni muy mas hay ha he fue era ser sido tengo "
    "tiene tienen hace hago quiero puedo puede pueden hola gracias ok vale bueno "
    "entonces pues ahi the an and or of to in on for with my your our is are was "
    "were be been it its this that i im m ive you we they she us them do does did "
    "not yes so but sin if at by from have has had what why how when where which who can "
    "could would will just still again please thanks hi hello okay now "
    "ugh uf uff ay argh agh omg meh jeez hmm mmm bah pff puf dios "
)
_STOP = frozenset(_STOP_WORDS.split())
_UNHAPPY = re.compile(
    r"\b(?:no|not|never|nunca|sin|nada|ni|nothing|nobody|nadie|dont|doesnt|didnt|isnt|cant|"
    r"wont|don t|doesn t|didn t|isn t|can t|won t|haven t|hasn t|wasn t|aren t|tampoco)\b"
)
_EMPHASIS = re.compile(r"[!?]{2,}|\b[A-ZÁÉÍÓÚÑ]{4,}\b")
_RESOLVED = re.compile(
    r"\b(?:works now|it works|working now|fixed|solved|sorted|resolved|all good|"
    r"ya funciona|ya sirve|ya jala|ya quedo|ya se arreglo|funciona bien|ya va bien|resuelto|"
    r"solucionado|arreglado)\b"
)
MIN_EARLIER = 2  # the customer's earlier messages (and answers) before a restatement counts
SHORT = 3  # content words at most of a short, emphatic restatement ("FECHA. CUÁNDO.")
_ASKS = re.compile(
    r"\b(?:cuando|donde|que|como|cuanto|cual|por que|when|where|what|how|why|which|now|ya|"
    r"ahora|todavia|aun|still|yet)\b"
)
_TELEGRAPHIC = re.compile(r"^(?:\W*\w+\W*[.!?]){2,}\W*$")  # "ugh. deposit. back. when."


def content_stems(text: str) -> dict[str, str]:
    """Content words of `text` by stem, cut to 4 letters ("leaks"/"leaking", "llego"/"llega")."""
    return dict(_content_pairs(text))


@functools.lru_cache(maxsize=1024)
def _content_pairs(text: str) -> tuple[tuple[str, str], ...]:
    # Cached: every message of a conversation looks at the same earlier messages again.
    found = normalize(text).split()
    return tuple(
        {w[:4]: w for w in found if w not in _STOP and (len(w) > 2 or w.isdigit())}.items()
    )


def complaint(text: str, *, answered: bool = False) -> str | None:
    """The phrase by which the customer says they repeat themselves, or None. `answered`:
    the assistant answered earlier in the conversation (`AFTER_ANSWER` counts then)."""
    head = HEAD.match(text or "")
    if head:
        return head.group(0).strip(" :-–—.")
    normal = normalize(text)
    found = COMPLAINT.search(normal) or (AFTER_ANSWER.search(normal) if answered else None)
    return found.group(0) if found else None


def refocus(text: str, earlier_user_texts: Sequence[str]) -> str | None:
    """The `FOCUS` phrase when the message also repeats a content word of the customer's
    earlier messages (the same question pressed again), or None. Call after an answer."""
    found = FOCUS.search(normalize(text))
    if not found:
        return None
    before: set[str] = set()
    for earlier in earlier_user_texts:
        before |= set(content_stems(earlier))
    return found.group(0) if before & set(content_stems(text)) else None


def restated(
    text: str, earlier_user_texts: Sequence[str], assistant_texts: Sequence[str]
) -> str | None:
    """The shared words when the customer restates what they already said (see the module
    docstring), or None."""
    if len(earlier_user_texts) < MIN_EARLIER or len(assistant_texts) < MIN_EARLIER:
        return None
    current = content_stems(text)
    before: set[str] = set()
    for earlier in earlier_user_texts:
        before |= set(content_stems(earlier))
    shared = [word for stem, word in current.items() if stem in before]
    persists = _PERSIST.search(normalize(text)) is not None
    if not persists and _RESOLVED.search(normalize(text)):
        return None
    unhappy = _UNHAPPY.search(normalize(text)) or _EMPHASIS.search(text)
    if _short_emphatic(text, current, shared):
        return " ".join(shared)
    if unhappy and len(shared) >= 2 and len(shared) * 2 >= len(current):
        return " ".join(shared)
    if persists and shared:
        return " ".join(shared)
    return None


def _short_emphatic(text: str, current: dict[str, str], shared: list[str]) -> bool:
    """A short message, shouted ("Y MI REEMBOLSO??", "FECHA. CUÁNDO.") or telegraphic ("ugh.
    deposit. back. when."), every content word of which the customer already said: the same
    question again after answers that did not answer it (the caller checked the answers)."""
    if not current or len(current) > SHORT or len(shared) < len(current):
        return False
    shouted = _EMPHASIS.search(text) or (text.isupper() and len(text.strip()) >= 4)
    if not (shouted or _TELEGRAPHIC.match(text.strip())):
        return False  # asking again or impatient, not a choice shouted ("EL AZUL!!")
    return bool("?" in text or _ASKS.search(normalize(text)) or _UNHAPPY.search(normalize(text)))

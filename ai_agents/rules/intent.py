"""Intent detection (the agent's `intent_detection`): keyword | llm | hybrid.

Config shape (validated by `parse_intent_config`, readable Spanish errors as ValidationError):

    {"mode": "hybrid",                       # keyword | llm | hybrid (`method` accepted too)
     "intents": [{"intent": "order_status",
                  "keywords": ["pedido", "dónde está"],
                  "exclude": ["pedido de prueba"],          # optional
                  "description": "...", "examples": ["..."], "action": "..."}]}

The shorter `keyword_intents: {intent: [keywords]}` / `known_intents: [...]` shape is accepted
too and merged into `intents`. Keywords match with `text.contains_phrase` (case- and
accent-insensitive, whole words, excludes); the built-in `escalate` intent has no keywords
(the request-for-a-person detector, `rules.person_request`, finds it before the model; the
model's intent after) and carries `HUMAN_AGENT_EXCLUDES` for keywords a tenant adds.

Keyword mode: among all matching keywords the one with the most words wins ("cuánto cuesta el
envío" -> pricing via "cuánto cuesta", not order_status via "envío"); ties go to config order.
Hybrid rule (`resolve_intent`): a keyword match wins (confidence 1.0); otherwise the intent field
the LLM returned in the same call is used (with the LLM's confidence). LLM mode uses the LLM's
field only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from django.utils.translation import gettext as _

from ai_agents.rules.text import HUMAN_AGENT_EXCLUDES, contains_phrase, words
from ai_agents.rules.validation import Errors, mapping, string_list

IntentMode = Literal["keyword", "llm", "hybrid"]
INTENT_MODES: tuple[str, ...] = ("keyword", "llm", "hybrid")
MAX_INTENTS = 100
MAX_KEYWORDS = 200


@dataclass(frozen=True)
class IntentMatch:
    intent: str
    keyword: str | None
    confidence: float = 1.0
    source: Literal["keyword", "llm"] = "keyword"


@dataclass(frozen=True)
class IntentDef:
    intent: str
    keywords: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    description: str = ""
    examples: tuple[str, ...] = ()
    action: str | None = None


@dataclass(frozen=True)
class IntentConfig:
    mode: IntentMode = "hybrid"
    intents: tuple[IntentDef, ...] = field(default_factory=tuple)

    def names(self) -> list[str]:
        return [i.intent for i in self.intents]

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "intents": [
                {
                    "intent": i.intent,
                    "keywords": list(i.keywords),
                    "exclude": list(i.exclude),
                    "description": i.description,
                    "examples": list(i.examples),
                    **({"action": i.action} if i.action else {}),
                }
                for i in self.intents
            ],
        }


DEFAULT_INTENT_CONFIG: dict[str, Any] = {
    "mode": "hybrid",
    "intents": [
        {
            # No keywords: a single word such as "persona" or "agente" is ambiguous ("¿el menú
            # es por persona?"); the request-for-a-person detector (the `user_request` trigger)
            # decides before the model, the model's own intent after.
            "intent": "escalate",
            "keywords": [],
            "exclude": list(HUMAN_AGENT_EXCLUDES),
            "description": "Usuario quiere hablar con persona",
            "examples": [
                "Quiero hablar con un humano",
                "¿Me pasas con facturación?",
                "Que me llame el encargado",
                "I'd like to speak to someone in billing",
            ],
            "action": "trigger_escalation",
        },
        {"intent": "order_status", "keywords": ["pedido", "orden", "envío", "dónde está"]},
        {"intent": "pricing", "keywords": ["precio", "costo", "cuánto cuesta", "cotización"]},
        {"intent": "support", "keywords": ["ayuda", "problema", "no funciona", "error"]},
    ],
}


def default_intent_config() -> IntentConfig:
    return parse_intent_config(DEFAULT_INTENT_CONFIG)


def _mode(data: Mapping[str, Any], errors: Errors) -> IntentMode:
    """`mode` (or its older name `method`); an invalid one is reported and read as hybrid."""
    mode = data.get("mode", data.get("method", "hybrid"))
    if mode not in INTENT_MODES:
        errors.add(
            _("Detección de intención: modo «%(mode)s» no válido (use keyword, llm o hybrid).")
            % {"mode": mode}
        )
        return "hybrid"
    return cast(IntentMode, mode)


def _entries(data: Mapping[str, Any], errors: Errors) -> list[Any]:
    """The raw intent entries of `intents`, `keyword_intents` and `known_intents`, in that order."""
    entries: list[Any] = []
    raw_intents = data.get("intents", [])
    if not isinstance(raw_intents, list):
        errors.add(_("Detección de intención: «intents» debe ser una lista."))
    else:
        entries.extend(raw_intents)
    keyword_intents = data.get("keyword_intents")
    if keyword_intents is not None:
        if not isinstance(keyword_intents, Mapping):
            errors.add(_("Detección de intención: «keyword_intents» debe ser un objeto."))
        else:
            entries.extend({"intent": k, "keywords": v} for k, v in keyword_intents.items())
    known = data.get("known_intents")
    if known is not None:
        if not isinstance(known, list):
            errors.add(_("Detección de intención: «known_intents» debe ser una lista."))
        else:
            entries.extend(known)
    if len(entries) > MAX_INTENTS:
        errors.add(_("Detección de intención: máximo %(n)s intenciones.") % {"n": MAX_INTENTS})
        entries = entries[:MAX_INTENTS]
    return entries


def _text_fields(entry: Mapping[str, Any], where: str, errors: Errors) -> tuple[str, str | None]:
    """(description, action); a non-text value is reported and dropped."""
    description = entry.get("description", "")
    action = entry.get("action")
    if not isinstance(description, str):
        errors.add(_("%(where)s: «description» debe ser texto.") % {"where": where})
        description = ""
    if action is not None and not isinstance(action, str):
        errors.add(_("%(where)s: «action» debe ser texto.") % {"where": where})
        action = None
    return description, action


def _parse_entry(entry: Any, index: int, errors: Errors) -> IntentDef | None:
    """One intent entry, or None (with the problem reported) when it has no usable name."""
    where = _("Intención %(n)s") % {"n": index}
    if not isinstance(entry, Mapping):
        errors.add(_("%(where)s: debe ser un objeto.") % {"where": where})
        return None
    name = entry.get("intent")
    if not isinstance(name, str) or not name.strip():
        errors.add(_("%(where)s: falta el nombre («intent»).") % {"where": where})
        return None
    name = name.strip()
    where = _("Intención «%(name)s»") % {"name": name}
    keywords = string_list(entry.get("keywords"), where + " · keywords", errors)
    exclude = string_list(entry.get("exclude"), where + " · exclude", errors)
    examples = string_list(entry.get("examples"), where + " · examples", errors)
    if len(keywords) > MAX_KEYWORDS:
        errors.add(_("%(where)s: demasiadas palabras clave.") % {"where": where})
    for keyword in keywords:
        if not words(keyword):
            errors.add(
                _("%(where)s: la palabra clave «%(kw)s» no tiene letras ni dígitos.")
                % {"where": where, "kw": keyword}
            )
    description, action = _text_fields(entry, where, errors)
    return IntentDef(
        intent=name,
        keywords=tuple(keywords),
        exclude=tuple(exclude),
        description=description,
        examples=tuple(examples),
        action=action,
    )


def _merge(merged: dict[str, IntentDef], intent: IntentDef) -> None:
    """Entries with the same name add up: new keywords/excludes/examples, first text wins."""
    slot = merged.get(intent.intent)
    if slot is None:
        merged[intent.intent] = intent
        return
    merged[intent.intent] = IntentDef(
        intent=slot.intent,
        keywords=(*slot.keywords, *(k for k in intent.keywords if k not in slot.keywords)),
        exclude=(*slot.exclude, *(e for e in intent.exclude if e not in slot.exclude)),
        description=slot.description or intent.description,
        examples=(*slot.examples, *intent.examples),
        action=slot.action or intent.action,
    )


def parse_intent_config(raw: Any) -> IntentConfig:
    """Validate the `intent_detection` JSON; raises ValidationError listing every problem."""
    errors = Errors()
    data = mapping(raw, _("Detección de intención"), errors)
    if data is None:
        errors.raise_if_any()
        return IntentConfig()
    mode = _mode(data, errors)
    merged: dict[str, IntentDef] = {}
    for index, entry in enumerate(_entries(data, errors), start=1):
        intent = _parse_entry(entry, index, errors)
        if intent is not None:
            _merge(merged, intent)
    errors.raise_if_any()
    return IntentConfig(mode=mode, intents=tuple(merged.values()))


def _as_config(intents_config: IntentConfig | Mapping[str, Any] | None) -> IntentConfig:
    if intents_config is None:
        return default_intent_config()
    if isinstance(intents_config, IntentConfig):
        return intents_config
    return parse_intent_config(intents_config)


def detect_keyword_intent(
    text: str, intents_config: IntentConfig | Mapping[str, Any] | None
) -> IntentMatch | None:
    """The keyword-mode intent of `text` (longest matching keyword wins, then config order)."""
    config = _as_config(intents_config)
    best: IntentMatch | None = None
    best_len = 0
    for intent in config.intents:
        for keyword in intent.keywords:
            size = len(words(keyword))
            if size > best_len and contains_phrase(text, keyword, excludes=intent.exclude):
                best, best_len = IntentMatch(intent=intent.intent, keyword=keyword), size
    return best


# `resolve_intent(keyword=...)` default: the keywords of the text have not been matched yet.
_NOT_MATCHED: Any = object()


def resolve_intent(
    text: str,
    intents_config: IntentConfig | Mapping[str, Any] | None,
    *,
    llm_intent: str | None,
    llm_confidence: float | None = None,
    keyword: IntentMatch | None = _NOT_MATCHED,
) -> IntentMatch | None:
    """Apply the mode: keyword -> keywords only; llm -> the LLM field; hybrid -> keyword wins.
    `keyword`: what `detect_keyword_intent` already gave for `text` (not matched again)."""
    config = _as_config(intents_config)
    if config.mode in ("keyword", "hybrid"):
        match = detect_keyword_intent(text, config) if keyword is _NOT_MATCHED else keyword
        if match is not None or config.mode == "keyword":
            return match
    name = (llm_intent or "").strip()
    if not name:
        return None
    confidence = 1.0 if llm_confidence is None else max(0.0, min(1.0, float(llm_confidence)))
    return IntentMatch(intent=name, keyword=None, confidence=confidence, source="llm")

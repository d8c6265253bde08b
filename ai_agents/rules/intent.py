"""Intent detection (spec `intent_detection`): keyword | llm | hybrid.

Config shape (validated by `parse_intent_config`, readable Spanish errors as ValidationError):

    {"mode": "hybrid",                       # keyword | llm | hybrid (spec name `method` accepted)
     "intents": [{"intent": "order_status",
                  "keywords": ["pedido", "dónde está"],
                  "exclude": ["pedido de prueba"],          # optional
                  "description": "...", "examples": ["..."], "action": "..."}]}

The spec's `keyword_intents: {intent: [keywords]}` / `known_intents: [...]` shape is accepted
too and merged into `intents`. Keywords match with `text.contains_phrase` (case- and
accent-insensitive, whole words, excludes); the built-in `escalate` intent also carries
`HUMAN_AGENT_EXCLUDES`.

Keyword mode: among all matching keywords the one with the most words wins ("cuánto cuesta el
envío" -> pricing via "cuánto cuesta", not order_status via "envío"); ties go to config order.
Hybrid rule (`resolve_intent`): a keyword match wins (confidence 1.0); otherwise the intent field
the LLM returned in the same call is used (with the LLM's confidence). LLM mode uses the LLM's
field only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

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
            "intent": "escalate",
            "keywords": ["humano", "agente", "persona", "hablar con alguien"],
            "exclude": list(HUMAN_AGENT_EXCLUDES),
            "description": "Usuario quiere hablar con persona",
            "examples": ["Quiero hablar con un humano", "Pásame con un agente"],
            "action": "trigger_escalation",
        },
        {"intent": "order_status", "keywords": ["pedido", "orden", "envío", "dónde está"]},
        {"intent": "pricing", "keywords": ["precio", "costo", "cuánto cuesta", "cotización"]},
        {"intent": "support", "keywords": ["ayuda", "problema", "no funciona", "error"]},
    ],
}


def default_intent_config() -> IntentConfig:
    return parse_intent_config(DEFAULT_INTENT_CONFIG)


def parse_intent_config(raw: Any) -> IntentConfig:
    """Validate the `intent_detection` JSON; raises ValidationError listing every problem."""
    errors = Errors()
    data = mapping(raw, _("Detección de intención"), errors)
    if data is None:
        errors.raise_if_any()
        return IntentConfig()
    mode = data.get("mode", data.get("method", "hybrid"))
    if mode not in INTENT_MODES:
        errors.add(
            _("Detección de intención: modo «%(mode)s» no válido (use keyword, llm o hybrid).")
            % {"mode": mode}
        )
        mode = "hybrid"

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

    merged: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(entries, start=1):
        where = _("Intención %(n)s") % {"n": index}
        if not isinstance(entry, Mapping):
            errors.add(_("%(where)s: debe ser un objeto.") % {"where": where})
            continue
        name = entry.get("intent")
        if not isinstance(name, str) or not name.strip():
            errors.add(_("%(where)s: falta el nombre («intent»).") % {"where": where})
            continue
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
        description = entry.get("description", "")
        action = entry.get("action")
        if not isinstance(description, str):
            errors.add(_("%(where)s: «description» debe ser texto.") % {"where": where})
            description = ""
        if action is not None and not isinstance(action, str):
            errors.add(_("%(where)s: «action» debe ser texto.") % {"where": where})
            action = None
        slot = merged.setdefault(
            name,
            {"keywords": [], "exclude": [], "examples": [], "description": "", "action": None},
        )
        slot["keywords"] += [k for k in keywords if k not in slot["keywords"]]
        slot["exclude"] += [e for e in exclude if e not in slot["exclude"]]
        slot["examples"] += examples
        slot["description"] = slot["description"] or description
        slot["action"] = slot["action"] or action

    errors.raise_if_any()
    return IntentConfig(
        mode=mode,
        intents=tuple(
            IntentDef(
                intent=name,
                keywords=tuple(v["keywords"]),
                exclude=tuple(v["exclude"]),
                description=v["description"],
                examples=tuple(v["examples"]),
                action=v["action"],
            )
            for name, v in merged.items()
        ),
    )


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

"""The agent's admin form: real widgets for the five JSON blocks, the raw JSON kept as the
"Avanzado" view.

Each block keeps its JSON textarea (the one thing posted, validated by `Agent.clean()` exactly as
before: `ai_agents.config`). `agent_config.js` builds the widgets from the spec below (labels and
help already translated here) and writes the textarea on every change; without JavaScript the
textarea is the form. The specs mirror the validators' ranges so the browser refuses most bad
values before the server names the rest.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from ai_agents.config import HISTORY_STRATEGIES
from ai_agents.models import Agent, HttpTool
from ai_agents.rules.escalation_config import PRIORITIES
from ai_agents.rules.intent import INTENT_MODES
from ai_agents.tools.names import BUILTIN_TOOL_NAMES


def _f(key: str, label: Any, kind: str, help_: Any = "", **extra: Any) -> dict[str, Any]:
    return {"key": key, "label": label, "kind": kind, "help": help_, **extra}


def _int(key: str, label: Any, low: int, high: int, *, help_: Any = "") -> dict[str, Any]:
    return _f(key, label, "int", help_, min=low, max=high, step=1)


def _num(key: str, label: Any, low: float, high: float, *, step: float) -> dict[str, Any]:
    return _f(key, label, "number", min=low, max=high, step=step)


def _choices(values: tuple[str, ...], labels: dict[str, Any]) -> list[list[Any]]:
    return [[v, labels[v]] for v in values]


STRATEGY_LABELS = {
    "oldest_first": _("Descartar los mensajes más antiguos"),
    "summarize": _("Resumir los mensajes antiguos"),
    "smart": _("Automático (resume solo cuando hace falta)"),
}
PRIORITY_LABELS = {
    "low": _("Baja"),
    "medium": _("Media"),
    "high": _("Alta"),
    "urgent": _("Urgente"),
}
MODE_LABELS = {
    "keyword": _("Solo palabras clave"),
    "llm": _("Solo el modelo"),
    "hybrid": _("Palabras clave y, si no hay, el modelo"),
}
TOOL_LABELS = {
    "knowledge_search": _("Buscar en las bases de conocimiento"),
    "contact_get": _("Leer los datos del contacto"),
    "contact_update": _("Actualizar los datos del contacto"),
    "session_variable_set": _("Guardar un dato de la conversación"),
}
CHIPS_HELP = _("Escriba y pulse Intro para añadir.")


def history_spec() -> dict[str, Any]:
    return {
        "fields": [
            _f(
                "truncation_strategy",
                _("Cuando la conversación es larga"),
                "select",
                _("Qué hacer con los mensajes que no caben en el contexto del modelo."),
                choices=_choices(HISTORY_STRATEGIES, STRATEGY_LABELS),
            ),
            _int("max_messages", _("Mensajes enviados al modelo"), 2, 200, help_=_("De 2 a 200.")),
            _int("max_tokens", _("Tokens de historial"), 100, 200000, help_=_("De 100 a 200 000.")),
            _int(
                "summarize_after",
                _("Resumir a partir de (mensajes)"),
                2,
                1000,
                help_=_("Con «resumir» o «automático»."),
            ),
            _f(
                "summary_prompt",
                _("Instrucciones del resumen"),
                "textarea",
                _("Vacío: las del producto."),
            ),
        ]
    }


def processing_spec() -> dict[str, Any]:
    ms = _("milisegundos")
    fields = [
        _int("llm_timeout_ms", _("Espera máxima del modelo"), 100, 30000, help_=ms),
        _int("total_timeout_ms", _("Espera máxima total por mensaje"), 100, 300000, help_=ms),
        _int("rag_timeout_ms", _("Espera máxima de la búsqueda"), 10, 60000, help_=ms),
        _int("tool_timeout_ms", _("Espera máxima de una herramienta"), 10, 60000, help_=ms),
        _int("llm_max_retries", _("Reintentos del modelo"), 0, 10),
        _int("llm_retry_delay_ms", _("Pausa antes de reintentar"), 0, 60000, help_=ms),
        _num("llm_retry_backoff", _("Multiplicador de la pausa"), 1, 10, step=0.1),
        _int("messages_per_minute", _("Mensajes por minuto (límite)"), 1, 10000),
        _int("tokens_per_minute", _("Tokens por minuto (límite)"), 100, 10_000_000),
        _f("streaming_enabled", _("Mostrar la respuesta mientras se escribe"), "bool"),
        _int("streaming_chunk_delay_ms", _("Pausa entre fragmentos"), 0, 5000, help_=ms),
        _int("max_tool_rounds", _("Rondas de herramientas por mensaje"), 0, 10),
        _int("rag_top_k", _("Fragmentos recuperados"), 1, 50),
        _num("rag_min_score", _("Puntuación mínima de un fragmento"), 0, 1, step=0.05),
        _f("escalate_on_failure", _("Pasar a una persona si el modelo falla"), "bool"),
        _int("failures_before_escalation", _("Fallos seguidos antes de pasar"), 1, 10),
        _int(
            "burst_quiet_ms",
            _("Esperar a que el cliente termine de escribir (0: responder cada mensaje)"),
            0,
            10000,
            help_=ms,
        ),
        _int("burst_max_ms", _("Espera máxima desde su primer mensaje"), 0, 30000, help_=ms),
    ]
    return {"fields": fields}


def _chips(key: str, label: Any) -> dict[str, Any]:
    return _f(key, label, "chips", CHIPS_HELP)


def triggers_spec() -> dict[str, Any]:
    threshold = _("Umbral")
    types = {
        "user_request": (
            _("El cliente pide una persona"),
            [_chips("phrases", _("Frases propias")), _chips("exclude", _("Frases que lo anulan"))],
        ),
        "keyword": (
            _("Palabras clave"),
            [_chips("keywords", _("Palabras clave")), _chips("exclude", _("Excepciones"))],
        ),
        "intent": (_("Intención detectada"), [_chips("intents", _("Intenciones"))]),
        "sentiment": (_("Sentimiento negativo"), [_num("threshold", threshold, -1, 1, step=0.05)]),
        "confidence": (
            _("Confianza baja del modelo"),
            [_num("threshold", threshold, 0, 1, step=0.05)],
        ),
        "loop_detection": (
            _("Conversación en bucle"),
            [
                _int("max_similar", _("Repeticiones"), 2, 20),
                _int("window", _("Mensajes revisados"), 1, 50),
                _num("similarity", _("Parecido mínimo"), 0.5, 1, step=0.05),
                _int("min_words", _("Palabras mínimas"), 1, 10),
            ],
        ),
    }
    return {
        "types": [{"value": k, "label": v[0], "fields": v[1]} for k, v in types.items()],
        "type_label": _("Tipo"),
        "priority": _f(
            "priority", _("Prioridad"), "select", choices=_choices(PRIORITIES, PRIORITY_LABELS)
        ),
        "message": _f(
            "message",
            _("Mensaje propio al pasar"),
            "textarea",
            _("Opcional; vacío: el mensaje de escalación del agente."),
        ),
        "item": _("Disparador"),
        "add": _("Añadir disparador"),
    }


def intents_spec() -> dict[str, Any]:
    return {
        "mode": _f(
            "mode", _("Cómo se detecta"), "select", choices=_choices(INTENT_MODES, MODE_LABELS)
        ),
        "fields": [
            _f("intent", _("Nombre"), "text", _("Sin espacios, p. ej. order_status.")),
            _f("description", _("Descripción"), "text", _("Para el modelo.")),
            _chips("keywords", _("Palabras clave")),
            _chips("exclude", _("Excepciones")),
            _chips("examples", _("Ejemplos de mensajes")),
            _f(
                "action",
                _("Al detectarla"),
                "select",
                choices=[
                    ["", _("Nada especial")],
                    ["trigger_escalation", _("Pasar a una persona")],
                ],
            ),
        ],
        "item": _("Intención"),
        "add": _("Añadir intención"),
    }


def tools_spec(tenant_id: int | None) -> dict[str, Any]:
    options = [[name, f"{TOOL_LABELS[name]} ({name})"] for name in BUILTIN_TOOL_NAMES]
    if tenant_id is not None:
        rows = HttpTool.objects.for_tenant(tenant_id).order_by("name")
        options += [[t.name, f"{t.name}: {t.description}"[:120]] for t in rows]
    return {"options": options}


class PrettyJSONField(forms.JSONField):
    """The raw JSON indented, as people read it in the "Avanzado" view."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, ensure_ascii=False, indent=2, cls=self.encoder)


class ConfigWidget(forms.Textarea):
    """The JSON textarea inside "Avanzado", plus the data the script builds the widgets from."""

    template_name = "ai_agents/widgets/agent_config.html"

    def __init__(self, kind: str, spec: dict[str, Any]) -> None:
        super().__init__(attrs={"rows": 12, "class": "agent-config-json", "spellcheck": "false"})
        self.kind = kind
        self.spec = spec

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        strings = {
            "remove": _("Quitar"),
            "invalid": _("El JSON no es válido; corríjalo en «Avanzado» para usar el formulario."),
        }
        context["config"] = {
            "kind": self.kind,
            "spec": json.dumps({**self.spec, **strings}, ensure_ascii=False, default=str),
        }
        return context


HELP_TEXTS = {
    "name": _("Cómo se llama el agente; los clientes pueden verlo."),
    "description": _("Para el equipo: para qué sirve este agente."),
    "system_prompt": _("Las instrucciones que sigue el modelo en cada respuesta."),
    "provider": _(
        "Quién genera las respuestas. «El configurado en la plataforma» usa Google si el "
        "servidor tiene clave, si no un servidor compatible con OpenAI, si no responde sin modelo."
    ),
    "model": _("Nombre del modelo del proveedor; vacío: el modelo por defecto del servidor."),
    "temperature": _("De 0 a 2: más bajo, respuestas más previsibles."),
    "max_output_tokens": _("Largo máximo de una respuesta (16 a 32 768)."),
    "knowledge_bases": _("Dónde busca el agente para responder."),
    "tools_enabled": _("Qué acciones puede hacer el agente además de responder."),
    "history_config": _("Cuánta conversación previa recibe el modelo."),
    "intent_detection": _("Qué quiere el cliente: temas que el agente reconoce."),
    "escalation_triggers": _(
        "Cuándo la conversación pasa a una persona; gana la prioridad más alta."
    ),
    "processing_config": _("Esperas, reintentos, límites y qué pasa si el modelo falla."),
    "fallback_message": _("Lo que recibe el cliente cuando el modelo no puede responder."),
    "escalation_message": _("Lo que recibe el cliente cuando pasa a una persona."),
    "is_active": _("Un agente inactivo no responde a nadie."),
}


JSON_FIELDS = (
    "tools_enabled",
    "history_config",
    "intent_detection",
    "escalation_triggers",
    "processing_config",
)


class AgentForm(forms.ModelForm):
    """The admin adds the tenant and the knowledge bases (their choices depend on the user)."""

    class Meta:
        model = Agent
        fields = [name for name in HELP_TEXTS if name != "knowledge_bases"]
        help_texts = HELP_TEXTS
        field_classes = dict.fromkeys(JSON_FIELDS, PrettyJSONField)

    class Media:
        css = {"all": ["ai_agents/agent_config.css"]}
        js = ["ai_agents/agent_config.js"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenant_id = self.instance.tenant_id or getattr(self, "only_tenant_id", None)
        specs = {
            "history_config": ("object", history_spec()),
            "processing_config": ("object", processing_spec()),
            "escalation_triggers": ("triggers", triggers_spec()),
            "intent_detection": ("intents", intents_spec()),
            "tools_enabled": ("tools", tools_spec(tenant_id)),
        }
        for name, (kind, spec) in specs.items():
            if name in self.fields:
                self.fields[name].widget = ConfigWidget(kind, spec)


FIELD_GROUPS: list[tuple[Any, tuple[str, ...]]] = [
    (None, ("tenant", "name", "description", "is_active", "system_prompt")),
    (_("Modelo"), ("provider", "model", "model_status", "temperature", "max_output_tokens")),
    (_("Conocimiento y herramientas"), ("knowledge_bases", "tools_enabled")),
    (
        _("Comportamiento"),
        ("history_config", "intent_detection", "escalation_triggers", "processing_config"),
    ),
    (_("Mensajes"), ("fallback_message", "escalation_message")),
]


def agent_fieldsets(fields: list[str]) -> list[tuple[Any, dict[str, Any]]]:
    """`fields` (what the admin shows this user) in the groups above; any other at the end of
    the first group."""
    known = {name for _title, names in FIELD_GROUPS for name in names}
    extra = [name for name in fields if name not in known]
    out: list[tuple[Any, dict[str, Any]]] = []
    for index, (title, names) in enumerate(FIELD_GROUPS):
        shown = [name for name in names if name in fields] + (extra if index == 0 else [])
        if shown:
            out.append((title, {"fields": shown}))
    return out

"""Which model an agent runs on and whether it can run: what the agent page shows the owner.

The keys are the platform's (environment), never the agent's: this says whether one is set,
never what it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from ai_agents.models import Agent
from erp.llm.gateway import default_provider_name

# What each provider needs from the environment before it can answer.
_NEEDS = {"google": "GOOGLE_AI_API_KEY", "openai": "OPENAI_BASE_URL"}


@dataclass(frozen=True)
class ModelStatus:
    provider: str  # the provider that answers: google | openai | offline
    provider_label: str
    follows_platform: bool  # the agent says "default": the platform's choice
    model: str
    key_set: bool  # the provider's key (Google) or server address (OpenAI-compatible)
    problem: str  # "" when the agent can run; else what visitors would suffer, in words


def _configured(provider: str) -> bool:
    setting = _NEEDS.get(provider)
    return setting is None or bool(getattr(settings, setting, None))


def _model_of(agent: Agent, provider: str) -> str:
    if agent.model:
        return agent.model
    if provider == "offline":
        return _("ninguno (respuestas desde la base de conocimiento)")
    if provider == "openai" and settings.OPENAI_DEFAULT_MODEL:
        return str(settings.OPENAI_DEFAULT_MODEL)
    return str(settings.LLM_DEFAULT_MODEL)


def _problem(provider: str) -> str:
    if provider == "google":
        return _(
            "Este agente usa Google, pero el servidor no tiene clave de API (GOOGLE_AI_API_KEY). "
            "Hasta que se configure, los clientes recibirán el mensaje de respaldo en lugar de "
            "una respuesta."
        )
    return _(
        "Este agente usa un servidor compatible con OpenAI, pero no hay dirección configurada "
        "(OPENAI_BASE_URL). Hasta que se configure, los clientes recibirán el mensaje de "
        "respaldo en lugar de una respuesta."
    )


def agent_model_status(*, agent: Agent) -> ModelStatus:
    follows = agent.provider == Agent.Provider.DEFAULT
    provider = default_provider_name() if follows else str(agent.provider)
    configured = _configured(provider)
    label = str(Agent.Provider(provider).label)
    return ModelStatus(
        provider=provider,
        provider_label=label,
        follows_platform=follows,
        model=_model_of(agent, provider),
        key_set=configured,
        problem="" if configured else _problem(provider),
    )

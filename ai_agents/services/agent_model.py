""" "Probar conexión": one tiny call to the agent's model, the outcome in words for the owner.

The call goes through the gateway (one attempt, recorded in the tenant's usage ledger) and
holds no database connection while it waits. The provider's own message is shown as the
detail (it names the real cause: "API key not valid", "quota exceeded"); keys never appear in
it, and the configured key is masked should a provider ever echo it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from ai_agents.models import Agent
from erp.llm import errors
from erp.llm.gateway import CallContext, get_provider
from erp.llm.ping import llm_ping

PING_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class PingResult:
    ok: bool
    message: str  # in words: what happened and what to do
    detail: str = ""  # the provider's own message, when it gave one


def _words(exc: errors.LlmError) -> str:
    words = (
        (
            errors.NotConfigured,
            _("El proveedor no está configurado en el servidor (falta la clave o la dirección)."),
        ),
        (errors.AuthFailed, _("La clave de API no es válida o no tiene permiso para este modelo.")),
        (
            errors.RateLimited,
            _("Se agotó la cuota del proveedor o hay demasiadas peticiones; pruebe más tarde."),
        ),
        (errors.Timeout, _("El proveedor no respondió a tiempo.")),
        (
            errors.Unavailable,
            _("No se pudo conectar con el proveedor, o no está disponible ahora."),
        ),
        (errors.BadRequest, _("El proveedor rechazó la petición; revise el nombre del modelo.")),
        (errors.NoCredits, _("La empresa no tiene créditos de IA disponibles.")),
        (errors.Blocked, _("El proveedor bloqueó la respuesta de prueba.")),
    )
    return next(
        (text for kind, text in words if isinstance(exc, kind)),
        _("La prueba de conexión falló."),
    )


def _masked(text: str) -> str:
    for secret in (settings.GOOGLE_AI_API_KEY, settings.OPENAI_API_KEY):
        if secret:
            text = text.replace(secret, "***")
    return text


def agent_model_ping(*, agent: Agent) -> PingResult:
    """Asks the agent's provider and model for one word; never raises for a provider error."""
    name = None if agent.provider == Agent.Provider.DEFAULT else str(agent.provider)
    context = CallContext(tenant=agent.tenant, agent_id=agent.pk)
    started = time.monotonic()
    try:
        provider = get_provider(name)
        result = llm_ping(
            provider=provider, model=agent.model, timeout_s=PING_TIMEOUT_S, context=context
        )
    except errors.LlmError as exc:
        return PingResult(ok=False, message=_words(exc), detail=_masked(str(exc)))
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return PingResult(
        ok=True,
        message=_("Conexión correcta: %(provider)s · %(model)s respondió en %(ms)s ms.")
        % {"provider": result.provider, "model": result.model, "ms": elapsed_ms},
    )

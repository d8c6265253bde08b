"""`manage.py llm_ping`: one tiny request to the configured model, to check a key and a URL.

The call goes through the gateway and is written to the usage ledger of `--tenant` (default:
the demo tenant when it exists). Without a tenant (or with `--no-ledger`) the provider is
called directly and nothing is recorded.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.translation import gettext as _

from erp.demo import DEMO_SLUG
from erp.llm.errors import AuthFailed, LlmError, NotConfigured
from erp.llm.gateway import CallContext, get_provider
from erp.llm.ping import llm_ping
from erp.tenancy.models import Tenant


class Command(BaseCommand):
    help = "Hace una petición mínima al modelo y muestra la respuesta, la latencia y los tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--provider", default=None, help="google, openai u offline")
        parser.add_argument("--model", default=None)
        parser.add_argument("--tenant", default=None, help="slug de la empresa que paga")
        parser.add_argument("--no-ledger", action="store_true", help="no registrar el consumo")
        parser.add_argument("--timeout", type=float, default=30.0, help="segundos")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            provider = get_provider(options["provider"])
        except NotConfigured as exc:
            raise CommandError(_("Proveedor no configurado: %s") % exc) from exc
        tenant = None if options["no_ledger"] else self._tenant(options["tenant"])
        started = time.monotonic()
        try:
            result = llm_ping(
                provider=provider,
                model=options["model"],
                timeout_s=options["timeout"],
                context=None if tenant is None else CallContext(tenant=tenant),
            )
        except LlmError as exc:
            hint = _(" (revise la clave de API)") if isinstance(exc, AuthFailed) else ""
            raise CommandError(
                _("Falló la petición a %(provider)s: %(kind)s: %(message)s%(hint)s")
                % {
                    "provider": provider.name,
                    "kind": type(exc).__name__,
                    "message": exc,
                    "hint": hint,
                }
            ) from exc
        elapsed_ms = int((time.monotonic() - started) * 1000)
        self.stdout.write(
            _("proveedor: %(p)s, modelo: %(m)s") % {"p": result.provider, "m": result.model}
        )
        self.stdout.write(_("respuesta: %s") % (result.text.strip() or _("(vacía)")))
        self.stdout.write(
            _("latencia: %(ms)d ms; tokens: %(i)d de entrada, %(o)d de salida")
            % {"ms": elapsed_ms, "i": result.input_tokens, "o": result.output_tokens}
        )
        if tenant is None:
            self.stdout.write(_("consumo no registrado (sin empresa)"))

    def _tenant(self, slug: str | None) -> Tenant | None:
        if slug:
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                raise CommandError(_("No existe la empresa %s") % slug)
            return tenant
        return Tenant.objects.filter(slug=DEMO_SLUG).first()

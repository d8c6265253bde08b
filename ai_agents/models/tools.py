"""Tenant-defined HTTP tools an agent can call (enabled by name in `Agent.tools_enabled`)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from ai_agents.tools.http_tool import HttpToolConfig, validate_http_tool_config
from ai_agents.tools.names import BUILTIN_TOOL_NAMES, RESERVED_NAMES
from erp.crypto import EncryptedTextField
from erp.tenancy.models import TenantOwnedModel


def _default_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


class HttpTool(TenantOwnedModel):
    class Method(models.TextChoices):
        GET = "GET", "GET"
        POST = "POST", "POST"
        PUT = "PUT", "PUT"
        PATCH = "PATCH", "PATCH"
        DELETE = "DELETE", "DELETE"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(
        _("nombre"),
        max_length=64,
        validators=[
            RegexValidator(
                r"^[a-z][a-z0-9_]*$", _("Use minúsculas, dígitos y _ (empezando por una letra).")
            )
        ],
        help_text=_("El nombre que el agente usa como acción, p. ej. consultar_pedido."),
    )
    description = models.CharField(_("descripción para el modelo"), max_length=500)
    method = models.CharField(_("método"), max_length=6, choices=Method.choices, default="GET")
    url_template = models.CharField(
        _("URL"),
        max_length=2000,
        help_text=_(
            "Con variables {argumento} en la ruta o consulta, y {contact.phone}, "
            "{contact.email}, {contact.external_id}, {contact.name} o {conversation.id}, que "
            "toman siempre los datos de la conversación (también en las cabeceras)."
        ),
    )
    headers_json = EncryptedTextField(
        _("cabeceras (JSON, cifradas)"),
        blank=True,
        help_text=_('Objeto JSON, p. ej. {"Authorization": "Bearer ..."}. Se guarda cifrado.'),
    )
    args_schema = models.JSONField(_("esquema de argumentos"), default=_default_schema)
    timeout_ms = models.PositiveIntegerField(
        _("tiempo de espera (ms)"),
        default=10000,
        validators=[MinValueValidator(100), MaxValueValidator(60000)],
    )
    max_response_chars = models.PositiveIntegerField(
        _("máximo de caracteres de respuesta"),
        default=4000,
        validators=[MinValueValidator(100), MaxValueValidator(50000)],
    )
    is_active = models.BooleanField(_("activa"), default=True)
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizada"), auto_now=True)

    class Meta:
        verbose_name = _("herramienta HTTP")
        verbose_name_plural = _("herramientas HTTP")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="httptool_unique_name")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def headers(self) -> dict[str, str]:
        if not self.headers_json:
            return {}
        data = json.loads(self.headers_json)
        return {str(k): str(v) for k, v in data.items()}

    def config(self) -> HttpToolConfig:
        return HttpToolConfig(
            method=self.method,
            url_template=self.url_template,
            headers=self.headers,
            args_schema=self.args_schema or _default_schema(),
            timeout_ms=self.timeout_ms,
            max_response_chars=self.max_response_chars,
        )

    def clean(self) -> None:
        if self.name in RESERVED_NAMES or self.name in BUILTIN_TOOL_NAMES:
            raise ValidationError({"name": _("Ese nombre está reservado.")})
        if self.headers_json:
            try:
                headers = json.loads(self.headers_json)
            except ValueError:
                raise ValidationError({"headers_json": _("JSON no válido.")}) from None
            if not isinstance(headers, dict):
                raise ValidationError({"headers_json": _("Debe ser un objeto JSON.")})
        if not isinstance(self.args_schema, dict):
            raise ValidationError({"args_schema": _("Debe ser un objeto JSON.")})
        problems = validate_http_tool_config(self.config())
        if problems:
            raise ValidationError(problems)

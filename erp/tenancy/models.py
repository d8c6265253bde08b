from __future__ import annotations

import zoneinfo
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models.signals import class_prepared
from django.utils.translation import gettext_lazy as _

from erp.tenancy.scoping import TenantBaseManager, TenantManager, current_scope, tenant_scope

slug_validator = RegexValidator(
    r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$",
    _("Use de 1 a 50 letras minúsculas, números o guiones."),
)


def validate_timezone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(_("Zona horaria desconocida: %(tz)s"), params={"tz": value})


class BudgetAction(models.TextChoices):
    CHEAPER_MODEL = "cheaper_model", _("cambiar a un modelo más barato")
    HANDOFF_ONLY = "handoff_only", _("solo pasar a una persona")


class Tenant(models.Model):
    slug = models.CharField(
        _("identificador"), max_length=50, unique=True, validators=[slug_validator]
    )
    name = models.CharField(_("nombre"), max_length=200)
    timezone = models.CharField(
        _("zona horaria"),
        max_length=64,
        default="America/Mexico_City",
        validators=[validate_timezone],
    )
    language = models.CharField(_("idioma"), max_length=8, choices=settings.LANGUAGES, default="es")
    ai_credit_balance_usd = models.DecimalField(
        _("saldo de crédito de IA (USD)"), max_digits=12, decimal_places=6, default=Decimal("0")
    )
    is_active = models.BooleanField(_("activa"), default=True)
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)
    # The monthly budget (erp/llm/budget.py): read from the tenant the model call already has.
    monthly_budget_usd = models.DecimalField(
        _("presupuesto mensual (USD)"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text=_(
            "Gasto del mes (modelo, transcripción y mensajes del canal) a partir del cual se "
            "aplica la acción. Vacío: sin presupuesto."
        ),
    )
    budget_action = models.CharField(
        _("al agotar el presupuesto"),
        max_length=20,
        choices=BudgetAction.choices,
        default=BudgetAction.HANDOFF_ONLY,
    )
    budget_cheaper_model = models.CharField(
        _("modelo más barato"),
        max_length=100,
        blank=True,
        help_text=_("Del mismo proveedor, p. ej. gemini-2.5-flash-lite."),
    )

    class Meta:
        verbose_name = _("empresa")
        verbose_name_plural = _("empresas")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        cheaper = self.budget_action == BudgetAction.CHEAPER_MODEL
        if self.monthly_budget_usd is not None and cheaper and not self.budget_cheaper_model:
            raise ValidationError(
                {
                    "budget_cheaper_model": _(
                        "Indique a qué modelo cambiar al agotar el presupuesto."
                    )
                }
            )


class TenantOwnedModel(models.Model):
    """Base of every tenant-owned table: carries `tenant_id`, default manager fails closed."""

    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="+", verbose_name=_("empresa")
    )

    objects = TenantManager()

    class Meta:
        abstract = True

    # Row-level security: code that runs with no scope at all (a webhook before it knows the
    # tenant, a task, a command) and saves, deletes or reloads a row it holds acts for that
    # row's tenant, as `.for_tenant()` does. Inside a scope, only the scope's tenants: the
    # database refuses a row of another tenant.

    def save(self, *args: Any, **kwargs: Any) -> None:
        if current_scope() is not None:
            return super().save(*args, **kwargs)
        with tenant_scope(self.tenant_id):
            return super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if current_scope() is not None:
            return super().delete(*args, **kwargs)
        with tenant_scope(self.tenant_id):
            return super().delete(*args, **kwargs)

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        if current_scope() is not None:
            return super().refresh_from_db(*args, **kwargs)
        with tenant_scope(self.tenant_id):
            return super().refresh_from_db(*args, **kwargs)


def _base_manager_install(sender: type[models.Model], **kwargs: Any) -> None:
    """Every tenant-owned model's base manager is a `TenantBaseManager` (set on its options
    rather than declared, so migrations see no manager change)."""
    if issubclass(sender, TenantOwnedModel) and not sender._meta.abstract:
        manager = TenantBaseManager()
        manager.name = "_base_manager"
        manager.model = sender
        manager.auto_created = True
        sender._meta.base_manager = manager


class_prepared.connect(_base_manager_install)


class Membership(TenantOwnedModel):
    class Role(models.TextChoices):
        OWNER = "owner", _("propietario")
        ADMIN = "admin", _("administrador")
        AGENT = "agent", _("agente")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("usuario"),
    )
    role = models.CharField(_("rol"), max_length=10, choices=Role.choices, default=Role.AGENT)
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)

    class Meta:
        verbose_name = _("membresía")
        verbose_name_plural = _("membresías")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="membership_unique_user"),
        ]
        indexes = [models.Index(fields=["tenant", "role"], name="membership_tenant_role")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant_id} ({self.role})"

    @property
    def can_manage(self) -> bool:
        return self.role in {self.Role.OWNER, self.Role.ADMIN}


class ApiKey(TenantOwnedModel):
    """An integration key. Only a SHA-256 hash of the key is stored; the key is shown once."""

    name = models.CharField(_("nombre"), max_length=100)
    prefix = models.CharField(_("prefijo visible"), max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("creada por"),
    )
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("último uso"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revocada"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("clave de API")
        verbose_name_plural = _("claves de API")
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "created_at"], name="apikey_tenant_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

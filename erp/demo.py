"""Demo data: a fictitious small business that later issues fill with agents and documents.

`demo_load` is idempotent. The demo user is created once: a password changed since (in the
admin) is kept across runs, and the login line then says so instead of printing the default.
Apps contribute their own demo rows through `DEMO_LOADERS`
(callables taking the demo tenant), registered in their AppConfig.ready(); `erp` never
imports the apps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from erp.tenancy.models import Membership, Tenant
from erp.tenancy.services import tenant_create, user_create

DEMO_SLUG = "demo"
DEMO_NAME = "Panadería La Espiga"
DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo1234"

DEMO_LOADERS: list[Callable[[Tenant], None]] = []


@dataclass(frozen=True)
class DemoLogin:
    email: str
    password: str | None  # None: changed by its owner since the demo was created
    tenant: Tenant


def demo_load() -> DemoLogin:
    tenant, _ = tenant_create(
        slug=DEMO_SLUG, name=DEMO_NAME, timezone_name="America/Mexico_City", language="es"
    )
    user: AbstractBaseUser | None = get_user_model().objects.filter(username=DEMO_EMAIL).first()
    if user is None:
        role = Membership.Role.OWNER
        user = user_create(email=DEMO_EMAIL, tenant=tenant, role=role, password=DEMO_PASSWORD)
    for loader in DEMO_LOADERS:
        loader(tenant)
    password = DEMO_PASSWORD if user.check_password(DEMO_PASSWORD) else None
    return DemoLogin(email=DEMO_EMAIL, password=password, tenant=tenant)

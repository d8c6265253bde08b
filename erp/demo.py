"""Demo data: a fictitious small business that later issues fill with agents and documents.

`demo_load` is idempotent. Apps contribute their own demo rows through `DEMO_LOADERS`
(callables taking the demo tenant), registered in their AppConfig.ready(); `erp` never
imports the apps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    password: str
    tenant: Tenant


def demo_load() -> DemoLogin:
    tenant, _ = tenant_create(
        slug=DEMO_SLUG, name=DEMO_NAME, timezone_name="America/Mexico_City", language="es"
    )
    user_create(email=DEMO_EMAIL, tenant=tenant, role=Membership.Role.OWNER, password=DEMO_PASSWORD)
    for loader in DEMO_LOADERS:
        loader(tenant)
    return DemoLogin(email=DEMO_EMAIL, password=DEMO_PASSWORD, tenant=tenant)

"""Shared pytest fixtures: two tenants, three personas, an API client per tenant.

Personas (Healthchecks/Saleor style): `owner` and `member` of tenant A, and `outsider`, the
owner of tenant B. Every API test checks that the outsider gets 404 and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from erp.tenancy.models import Membership, Tenant
from erp.tenancy.services import apikey_create
from erp.testing.factories import MembershipFactory, TenantFactory, UserFactory


@dataclass
class Persona:
    user: Any
    tenant: Tenant
    membership: Membership


@pytest.fixture
def tenant_a(db: Any) -> Tenant:
    return TenantFactory.create(slug="acme", name="Acme")


@pytest.fixture
def tenant_b(db: Any) -> Tenant:
    return TenantFactory.create(slug="globex", name="Globex")


def _persona(tenant: Tenant, username: str, role: str) -> Persona:
    user = UserFactory(username=username)
    membership = MembershipFactory.create(tenant=tenant, user=user, role=role)
    return Persona(user=user, tenant=tenant, membership=membership)


@pytest.fixture
def owner(tenant_a: Tenant) -> Persona:
    return _persona(tenant_a, "owner@acme.test", Membership.Role.OWNER)


@pytest.fixture
def member(tenant_a: Tenant) -> Persona:
    return _persona(tenant_a, "agent@acme.test", Membership.Role.AGENT)


@pytest.fixture
def outsider(tenant_b: Tenant) -> Persona:
    return _persona(tenant_b, "owner@globex.test", Membership.Role.OWNER)


def api_client_for(tenant: Tenant) -> APIClient:
    client = APIClient()
    created = apikey_create(tenant=tenant, name="tests")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created.key}")
    client.api_key = created  # type: ignore[attr-defined]  # for the tests that need the key
    return client


@pytest.fixture
def api_a(tenant_a: Tenant) -> APIClient:
    """API client authenticated with an API key of tenant A."""
    return api_client_for(tenant_a)


@pytest.fixture
def api_b(tenant_b: Tenant) -> APIClient:
    """API client authenticated with an API key of tenant B (the outsider's)."""
    return api_client_for(tenant_b)


def session_client_for(persona: Persona) -> APIClient:
    client = APIClient()
    client.force_login(persona.user)
    return client


@pytest.fixture
def owner_client(owner: Persona) -> APIClient:
    return session_client_for(owner)


@pytest.fixture
def member_client(member: Persona) -> APIClient:
    return session_client_for(member)


@pytest.fixture
def outsider_client(outsider: Persona) -> APIClient:
    return session_client_for(outsider)


@pytest.fixture(autouse=True)
def _default_language() -> Any:
    """Each test starts in the default language: a request the test client made in English
    leaves English active on the thread (LocaleMiddleware activates, nothing deactivates)."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_price_table() -> Any:
    """Each test sees the ModelPrice rows it creates (the gateway caches the price table)."""
    from erp.llm.usage import price_cache_clear

    price_cache_clear()
    yield
    price_cache_clear()


@pytest.fixture
def channel_prices(db: Any) -> None:
    """The seed WhatsApp price table of the migrations `llm/0004` and `llm/0006` (a
    transactional test before this one may have flushed it)."""
    import importlib

    from django.apps import apps

    seed = importlib.import_module("erp.llm.migrations.0004_pricing_channel_costs")
    seed.seed_prices(apps, None)
    service = importlib.import_module("erp.llm.migrations.0006_service_priced_like_utility")
    service.service_like_utility(apps, None)


_owner: list[str] = []


@contextmanager
def owner_connection() -> Iterator[Any]:
    """A psycopg connection (autocommit) to the test database as its owner, for what the
    application's role may not do (DDL, ANALYZE); it sees only committed rows."""
    import psycopg
    from django.db import connection

    s = connection.settings_dict
    with psycopg.connect(
        host=s["HOST"] or None,
        port=s["PORT"] or None,
        dbname=s["NAME"],
        user=_owner[0],
        password=_owner[1] or None,
        autocommit=True,
    ) as owner:
        yield owner


def _connect_as(user: str, password: str) -> None:
    from django.conf import settings
    from django.db import connections

    for alias in connections:
        connection = connections[alias]
        connection.close()
        for entry in (connection.settings_dict, settings.DATABASES[alias]):
            entry["USER"], entry["PASSWORD"] = user, password


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: Any, django_db_blocker: Any) -> Any:
    """The suite runs as the application's role, so row-level security really applies; the
    owner (DATABASE_URL) created and migrated the test database, and drops it at the end."""
    from django.conf import settings
    from django.db import connection

    role = settings.DATABASE_APP_ROLE
    with django_db_blocker.unblock():
        owner = (connection.settings_dict["USER"], connection.settings_dict["PASSWORD"])
        _owner[:] = owner
        with connection.cursor() as cursor:
            # Test teardown (TransactionTestCase) empties the tables with TRUNCATE, which row
            # security does not filter: a right the role has in tests only.
            cursor.execute(f"GRANT TRUNCATE ON ALL TABLES IN SCHEMA public TO {role}")
        _connect_as(role, settings.DATABASE_APP_PASSWORD)
    yield
    with django_db_blocker.unblock():
        _connect_as(*owner)

"""Fixtures of the web chat tests: a binding per tenant and clean per-IP counters (every test
comes from 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import cache

from ai_agents.models import ChannelBinding
from ai_agents.tests.channels.webchat.support import ORIGIN, webchat_binding
from erp.tenancy.models import Tenant


@pytest.fixture(autouse=True)
def _clean_limits() -> Iterator[None]:
    cache.clear()  # per-IP counters: every test comes from 127.0.0.1
    yield
    cache.clear()


@pytest.fixture
def binding(tenant_a: Tenant) -> ChannelBinding:
    return webchat_binding(tenant_a, "Lucía", [ORIGIN, "https://*.acme.example"])


@pytest.fixture
def binding_b(tenant_b: Tenant) -> ChannelBinding:
    return webchat_binding(tenant_b, "Globo", ["https://globex.example"])

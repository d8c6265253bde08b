"""Fixtures of the gateway tests."""

from __future__ import annotations

import pytest

from erp.llm.gateway import CallContext
from erp.tenancy.models import Tenant


@pytest.fixture
def ctx(tenant_a: Tenant) -> CallContext:
    return CallContext(tenant=tenant_a)

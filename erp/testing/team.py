"""Helpers for tests of the team page (`/team/<slug>/`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache

from erp.tenancy.models import Membership, Tenant

# The set-password link, as the page and the e-mail give it.
INVITE_LINK = re.compile(r"https?://[^\s\"<]+/password/set/[^\s\"<]+/")


def team_roles(tenant: Tenant) -> dict[str, str]:
    """{e-mail: role} of the tenant's members."""
    return dict(Membership.objects.for_tenant(tenant).values_list("user__email", "role"))


def team_invite(client: Any, email: str, role: str = "agent", slug: str = "acme") -> Any:
    return client.post(f"/team/{slug}/invite", {"email": email, "role": role})


@pytest.fixture
def fresh_invite_allowance() -> None:
    """Tenant ids come back after a transactional test's flush, and the hourly invitation
    window (on Redis) would carry over from an earlier test of the same id."""
    cache.clear()

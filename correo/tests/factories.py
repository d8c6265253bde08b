"""Factories for correo rows."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from correo.models import ZohoConnection
from correo.tests.fake_zoho import REFRESH_TOKEN


def zoho_connection_create(
    *, owner: Any, tenant: Any, refresh_token: str = REFRESH_TOKEN, **fields: Any
) -> ZohoConnection:
    """A connected mailbox (refresh token of the fake Zoho; account id resolved on first use)."""
    values: dict[str, Any] = {
        "refresh_token": refresh_token,
        "scopes": "ZohoMail.messages.READ,ZohoMail.accounts.READ,ZohoMail.folders.READ",
        "connected_at": timezone.now(),
        "email": "",
        **fields,
    }
    return ZohoConnection.objects.for_tenant(tenant).create(owner=owner, tenant=tenant, **values)

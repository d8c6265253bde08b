"""Connecting a staff member's mailbox: from an OAuth code (web flow) or a refresh token (CLI)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from correo.models import ZohoConnection
from correo.zoho.client import ZohoMailClient
from correo.zoho.oauth import (
    SCOPES,
    ZohoAccountsClient,
    hosts_for_data_centre,
    mail_host_for,
)
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope


def _connection_for(*, owner: Any, tenant: Tenant) -> ZohoConnection:
    # One mailbox per user (OneToOne), whichever tenant it was connected for: look it up across
    # tenants so that reconnecting for another tenant moves it instead of failing.
    conn = ZohoConnection.objects.unscoped().filter(owner=owner).first()
    return conn or ZohoConnection(owner=owner, tenant=tenant)


def _moving(conn: ZohoConnection, tenant: Tenant) -> Any:
    """The scope of a (re)connection: the tenant the row leaves and the one it joins (row
    security checks the row before and after the UPDATE)."""
    return tenant_scope(*{conn.tenant_id or tenant.pk, tenant.pk})


def _reset(
    conn: ZohoConnection, *, tenant: Tenant, refresh_token: str, accounts: str, mail: str, dc: str
) -> None:
    conn.tenant = tenant
    conn.refresh_token = refresh_token
    conn.access_token = ""
    conn.access_token_expires_at = None
    conn.account_id = ""
    conn.email = ""
    conn.data_centre = dc
    conn.accounts_base_url = accounts
    conn.mail_base_url = mail
    conn.connected_at = timezone.now()
    conn.last_error = ""
    conn.last_error_at = None


def zoho_connect_with_refresh_token(
    *, owner: Any, tenant: Tenant, refresh_token: str, data_centre: str | None = None
) -> ZohoConnection:
    """Connects (or reconnects) from a self-client refresh token, validated by one refresh and
    the account lookup. Nothing is saved when Zoho refuses it (the error propagates)."""
    accounts, mail, dc = "", "", "com"
    if data_centre:
        accounts, mail = hosts_for_data_centre(data_centre)
        dc = data_centre.strip().lower()
    with transaction.atomic():
        conn = _connection_for(owner=owner, tenant=tenant)
        with _moving(conn, tenant):
            _reset(
                conn,
                tenant=tenant,
                refresh_token=refresh_token,
                accounts=accounts,
                mail=mail,
                dc=dc,
            )
            conn.scopes = SCOPES
            conn.save()
        ZohoMailClient(conn).account_id()  # refreshes once, then resolves and stores the id
    return conn


def zoho_connect_with_code(
    *, owner: Any, tenant: Tenant, code: str, redirect_uri: str, accounts_server: str | None
) -> ZohoConnection:
    """The OAuth callback: exchanges the code, stores the tokens (encrypted) and the account."""
    accounts = accounts_server or settings.ZOHO_ACCOUNTS_BASE_URL.rstrip("/")
    grant = ZohoAccountsClient(base_url=accounts).exchange_code(
        code=code, redirect_uri=redirect_uri
    )
    configured = accounts == settings.ZOHO_ACCOUNTS_BASE_URL.rstrip("/")
    with transaction.atomic():
        conn = _connection_for(owner=owner, tenant=tenant)
        with _moving(conn, tenant):
            _reset(
                conn,
                tenant=tenant,
                refresh_token=grant.refresh_token,
                accounts="" if configured else accounts,
                mail="" if configured else mail_host_for(accounts),
                dc=_data_centre_of(accounts),
            )
            conn.scopes = grant.scope.replace(" ", ",") or SCOPES
            conn.access_token = grant.access_token
            conn.access_token_expires_at = timezone.now() + timedelta(seconds=grant.expires_in)
            conn.save()
        ZohoMailClient(conn).account_id()
    return conn


def _data_centre_of(accounts: str) -> str:
    from correo.zoho.oauth import DATA_CENTRES

    for name, (server, _mail) in DATA_CENTRES.items():
        if server == accounts:
            return name
    return "com"

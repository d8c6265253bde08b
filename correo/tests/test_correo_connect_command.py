"""`manage.py correo_connect EMAIL --refresh-token T [--data-centre com]`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from correo.models import ZohoConnection
from correo.tests.fake_zoho import ACCOUNT_ID, REFRESH_TOKEN, FakeZoho

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("correo_connect", *args, stdout=out)
    return out.getvalue()


def test_connects_and_prints_the_account_id_last(fake_zoho: FakeZoho, owner):
    output = run(owner.user.email, "--refresh-token", REFRESH_TOKEN)
    assert output.strip().splitlines()[-1] == ACCOUNT_ID
    conn = ZohoConnection.objects.for_tenant(owner.tenant).get(owner=owner.user)
    assert conn.refresh_token == REFRESH_TOKEN
    assert conn.account_id == ACCOUNT_ID
    assert conn.email == "rebecca@zylker.com"
    assert conn.access_token and conn.access_token_expires_at
    assert len(fake_zoho.token_requests("refresh_token")) == 1
    assert REFRESH_TOKEN not in output


def test_reconnect_replaces_the_token(fake_zoho: FakeZoho, owner, zoho_connection):
    fake_zoho.refresh_tokens.add("1000.second")
    run(owner.user.email, "--refresh-token", "1000.second")
    conn = ZohoConnection.objects.for_tenant(owner.tenant).get(owner=owner.user)
    assert conn.pk == zoho_connection.pk
    assert conn.refresh_token == "1000.second"


def test_unknown_user(fake_zoho: FakeZoho, owner):
    with pytest.raises(CommandError, match="No existe ningún usuario"):
        run("nadie@acme.test", "--refresh-token", REFRESH_TOKEN)


def test_bad_token_saves_nothing(fake_zoho: FakeZoho, owner):
    with pytest.raises(CommandError, match="invalid_code"):
        run(owner.user.email, "--refresh-token", "1000.bogus")
    assert not ZohoConnection.objects.for_tenant(owner.tenant).exists()


def test_bad_token_keeps_the_previous_connection(fake_zoho: FakeZoho, owner, zoho_connection):
    with pytest.raises(CommandError):
        run(owner.user.email, "--refresh-token", "1000.bogus")
    conn = ZohoConnection.objects.for_tenant(owner.tenant).get(owner=owner.user)
    assert conn.refresh_token == REFRESH_TOKEN


def test_data_centre_hosts_are_used_and_kept(fake_zoho: FakeZoho, owner, settings, monkeypatch):
    from correo.zoho import oauth

    monkeypatch.setitem(oauth.DATA_CENTRES, "eu", (fake_zoho.url, fake_zoho.url))
    settings.ZOHO_ACCOUNTS_BASE_URL = "http://127.0.0.1:9"  # nothing listens: must not be used
    settings.ZOHO_MAIL_BASE_URL = "http://127.0.0.1:9"
    output = run(owner.user.email, "--refresh-token", REFRESH_TOKEN, "--data-centre", "eu")
    assert output.strip().splitlines()[-1] == ACCOUNT_ID
    conn = ZohoConnection.objects.for_tenant(owner.tenant).get(owner=owner.user)
    assert (conn.data_centre, conn.accounts_base_url, conn.mail_base_url) == (
        "eu",
        fake_zoho.url,
        fake_zoho.url,
    )


def test_unknown_data_centre(fake_zoho: FakeZoho, owner):
    with pytest.raises(CommandError, match="invalid choice"):
        run(owner.user.email, "--refresh-token", REFRESH_TOKEN, "--data-centre", "mars")


def test_not_configured(fake_zoho: FakeZoho, owner, settings):
    settings.ZOHO_CLIENT_SECRET = None
    with pytest.raises(CommandError, match="no está configurado"):
        run(owner.user.email, "--refresh-token", REFRESH_TOKEN)

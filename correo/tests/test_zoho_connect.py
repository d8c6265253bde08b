"""The OAuth connect flow (`/correo/zoho/connect` -> Zoho -> `/correo/zoho/callback`)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.messages import get_messages
from django.db import connection as db
from django.test import Client

from correo.models import ZohoConnection
from correo.tests.fake_zoho import ACCOUNT_ID, CLIENT_ID, FakeZoho
from erp.tenancy.scoping import all_tenants

pytestmark = pytest.mark.django_db

NEW_REFRESH = "1000.refresh-from-consent.zzz"


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner.user)
    return client


def start(browser: Client) -> dict[str, list[str]]:
    response = browser.get("/correo/zoho/connect")
    assert response.status_code == 302
    return parse_qs(urlsplit(response["Location"]).query)


def connection_of(user) -> ZohoConnection | None:
    return ZohoConnection.objects.unscoped().filter(owner=user).first()


def test_connect_redirects_to_zoho_consent(fake_zoho: FakeZoho, browser: Client):
    response = browser.get("/correo/zoho/connect")
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}" == fake_zoho.url
    assert location.path == "/oauth/v2/auth"
    query = parse_qs(location.query)
    assert query["scope"] == ["ZohoMail.messages.READ,ZohoMail.accounts.READ,ZohoMail.folders.READ"]
    assert query["access_type"] == ["offline"]
    assert query["prompt"] == ["consent"]
    assert query["response_type"] == ["code"]
    assert query["client_id"] == [CLIENT_ID]
    assert query["redirect_uri"] == ["http://testserver/correo/zoho/callback"]
    assert len(query["state"][0]) >= 40


def test_callback_exchanges_the_code_and_stores_the_token_encrypted(
    fake_zoho: FakeZoho, browser: Client, owner
):
    state = start(browser)["state"][0]
    fake_zoho.add_code("code-1", NEW_REFRESH)

    response = browser.get("/correo/zoho/callback", {"state": state, "code": "code-1"})

    assert response.status_code == 302
    assert response["Location"] == "/correo/"
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Buzón conectado: rebecca@zylker.com"
    ]
    conn = connection_of(owner.user)
    assert conn is not None
    assert conn.tenant_id == owner.tenant.pk
    assert conn.refresh_token == NEW_REFRESH
    assert conn.account_id == ACCOUNT_ID
    assert conn.connected_at is not None
    assert "ZohoMail.messages.READ" in conn.scopes
    exchange = fake_zoho.token_requests("authorization_code")
    assert exchange == [
        {
            "grant_type": "authorization_code",
            "client_id": CLIENT_ID,
            "client_secret": "fake-client-secret",
            "redirect_uri": "http://testserver/correo/zoho/callback",
            "code": "code-1",
        }
    ]
    # The access token from the exchange served the account lookup: no refresh needed.
    assert fake_zoho.token_requests("refresh_token") == []
    with all_tenants(), db.cursor() as cursor:
        cursor.execute("SELECT * FROM correo_zohoconnection WHERE id = %s", [conn.pk])
        row = " ".join(str(v) for v in cursor.fetchone())
    assert NEW_REFRESH not in row
    assert "refresh-from-consent" not in row
    assert conn.access_token not in row


def test_state_is_single_use(fake_zoho: FakeZoho, browser: Client, owner):
    state = start(browser)["state"][0]
    fake_zoho.add_code("code-1", NEW_REFRESH)
    fake_zoho.add_code("code-2", "1000.other")
    assert (
        browser.get("/correo/zoho/callback", {"state": state, "code": "code-1"}).status_code == 302
    )
    replay = browser.get("/correo/zoho/callback", {"state": state, "code": "code-2"})
    assert replay.status_code == 400
    assert "no es válido" in replay.content.decode()
    assert connection_of(owner.user).refresh_token == NEW_REFRESH
    assert len(fake_zoho.token_requests("authorization_code")) == 1


@pytest.mark.parametrize("state", ["", "wrong-state", "estado-ñ"])
def test_bad_state_is_refused_without_calling_zoho(
    fake_zoho: FakeZoho, browser: Client, owner, state
):
    start(browser)
    fake_zoho.add_code("code-1", NEW_REFRESH)
    response = browser.get("/correo/zoho/callback", {"state": state, "code": "code-1"})
    assert response.status_code == 400
    assert connection_of(owner.user) is None
    assert fake_zoho.token_requests() == []


def test_state_bound_to_the_session(fake_zoho: FakeZoho, browser: Client, member):
    state = start(browser)["state"][0]
    other = Client()
    other.force_login(member.user)
    fake_zoho.add_code("code-1", NEW_REFRESH)
    response = other.get("/correo/zoho/callback", {"state": state, "code": "code-1"})
    assert response.status_code == 400
    assert connection_of(member.user) is None


def test_refused_code_is_a_clear_page(fake_zoho: FakeZoho, browser: Client, owner):
    state = start(browser)["state"][0]
    response = browser.get("/correo/zoho/callback", {"state": state, "code": "expired"})
    assert response.status_code == 400
    assert "rechazado la autorización" in response.content.decode()
    assert connection_of(owner.user) is None


def test_user_denied_consent(fake_zoho: FakeZoho, browser: Client, owner):
    state = start(browser)["state"][0]
    response = browser.get("/correo/zoho/callback", {"state": state, "error": "access_denied"})
    assert response.status_code == 400
    assert "no ha concedido" in response.content.decode()
    assert connection_of(owner.user) is None
    assert fake_zoho.token_requests() == []


def test_zoho_down_during_exchange_is_502(fake_zoho: FakeZoho, browser: Client, owner):
    from erp.testing.fake_http import FakeResponse

    state = start(browser)["state"][0]
    fake_zoho.push_token(FakeResponse.json({"oops": 1}, status=503))
    response = browser.get("/correo/zoho/callback", {"state": state, "code": "x"})
    assert response.status_code == 502
    assert connection_of(owner.user) is None


def test_not_configured_is_503(fake_zoho: FakeZoho, browser: Client, settings):
    settings.ZOHO_CLIENT_ID = None
    response = browser.get("/correo/zoho/connect")
    assert response.status_code == 503
    assert "ZOHO_CLIENT_ID" in response.content.decode()


def test_anonymous_goes_to_login(fake_zoho: FakeZoho):
    response = Client().get("/correo/zoho/connect")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/correo/zoho/connect")


def test_non_staff_refused(fake_zoho: FakeZoho, owner):
    owner.user.is_staff = False
    owner.user.save()
    client = Client()
    client.force_login(owner.user)
    assert client.get("/correo/zoho/connect").status_code == 403
    assert client.get("/correo/zoho/callback", {"state": "x", "code": "y"}).status_code == 403


def test_post_not_allowed(fake_zoho: FakeZoho, browser: Client):
    assert browser.post("/correo/zoho/connect").status_code == 405


def _age_the_state(browser: Client, seconds: float) -> None:
    """The pending connection as if started `seconds` ago (the session is server-side)."""
    session = browser.session
    pending = session["correo_zoho_oauth"]
    session["correo_zoho_oauth"] = {**pending, "created": pending["created"] - seconds}
    session.save()


def test_the_state_is_valid_for_10_minutes(fake_zoho: FakeZoho, browser: Client, owner):
    """The production lifetime (nothing patched): 9 min 50 s old works, 10 min 10 s does not."""
    state = start(browser)["state"][0]
    _age_the_state(browser, 10 * 60 + 10)
    fake_zoho.add_code("code-1", NEW_REFRESH)

    late = browser.get("/correo/zoho/callback", {"state": state, "code": "code-1"})

    assert late.status_code == 400
    assert "no es válido o ha caducado" in late.content.decode()
    assert connection_of(owner.user) is None
    assert fake_zoho.token_requests() == []

    state = start(browser)["state"][0]
    _age_the_state(browser, 10 * 60 - 10)
    in_time = browser.get("/correo/zoho/callback", {"state": state, "code": "code-1"})
    assert in_time.status_code == 302
    assert connection_of(owner.user).refresh_token == NEW_REFRESH

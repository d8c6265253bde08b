"""ZohoMailClient against the fake Zoho: results, tokens, throttling, typed errors, search keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection as db
from django.utils import timezone

from correo.models import ZohoConnection
from correo.tests.fake_zoho import ACCOUNT_ID, INBOX_ID, SENT_ID, FakeZoho, mail_error, payload
from correo.zoho import (
    ZohoAuthError,
    ZohoBadRequest,
    ZohoMailClient,
    ZohoNotConfigured,
    ZohoNotConnected,
    ZohoNotFound,
    ZohoRateLimited,
    ZohoTimeout,
    ZohoUnavailable,
    build_search_key,
)
from correo.zoho.client import reset_token_cache
from erp.tenancy.scoping import all_tenants
from erp.testing.fake_http import FakeResponse

pytestmark = pytest.mark.django_db

HETZNER_HTML = "<div><p>Your server was rebooted for maintenance.</p></div>"


def reload(conn: ZohoConnection) -> ZohoConnection:
    return ZohoConnection.objects.for_tenant(conn.tenant_id).get(pk=conn.pk)


def test_search_returns_summaries_in_the_spec_shape(fake_zoho: FakeZoho, zoho_connection):
    received = datetime(2026, 11, 20, 8, 30, tzinfo=UTC)
    fake_zoho.add_message(
        message_id="1749416383000100001",
        subject="Server rebooted &amp; back online",
        from_address="alerts@hetzner.de",
        sender="Hetzner Alerts",
        summary="Dear customer, " + "your server was rebooted. " * 20,
        html=HETZNER_HTML,
        received=received,
    )
    fake_zoho.add_message(message_id="2", subject="Otra cosa", from_address="a@b.example")

    results = ZohoMailClient(zoho_connection).search(sender="alerts@hetzner.de")

    assert len(results) == 1
    hit = results[0]
    assert (hit.message_id, hit.folder_id, hit.de, hit.asunto, hit.fecha) == (
        "1749416383000100001",
        INBOX_ID,
        "Hetzner Alerts <alerts@hetzner.de>",
        "Server rebooted & back online",
        "2026-11-20T08:30:00Z",
    )
    assert len(hit.resumen) == 150 and hit.resumen.endswith("…")
    assert hit.resumen.startswith("Dear customer, your server was rebooted.")
    assert fake_zoho.search_keys() == ["sender:alerts@hetzner.de"]
    search = fake_zoho.mail_requests(r"/messages/search$")[0]
    assert search.query["limit"] == ["10"]


def test_search_parses_live_and_legacy_rows(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection)
    client.account_id()
    fake_zoho.push_mail(FakeResponse.json(payload("search_response")))
    results = client.search(query="invoice")
    assert [r.message_id for r in results] == [
        "1749416383000100001",
        "1749413000000200002",
        "1749405000000300003",
    ]
    assert results[0].asunto == "Invoice & delivery note – order #10423"
    assert results[0].de == "Acme Billing <billing@acme.example>"
    assert (
        results[2].resumen
        == "Bonjour, merci pour votre message. Nous revenons vers vous dés que possible."
    )
    assert all(r.fecha.endswith("Z") for r in results)


def test_search_limit_and_empty_criteria(fake_zoho: FakeZoho, zoho_connection):
    for i in range(15):
        fake_zoho.add_message(
            message_id=str(100 + i), subject=f"Factura {i}", from_address="f@x.es"
        )
    client = ZohoMailClient(zoho_connection)
    assert len(client.search(subject="factura")) == 10
    assert len(client.search(subject="factura", limit=3)) == 3
    assert client.search(query="  ", sender=None, subject=":::") == []
    assert len(fake_zoho.search_keys()) == 2  # the empty search never reached Zoho


def test_read_html_and_not_found(fake_zoho: FakeZoho, zoho_connection):
    fake_zoho.add_message(
        message_id="55", subject="Aviso", from_address="a@b.es", html=HETZNER_HTML
    )
    client = ZohoMailClient(zoho_connection)
    assert client.read_html(message_id="55", folder_id=INBOX_ID) == HETZNER_HTML
    with pytest.raises(ZohoNotFound):
        client.read_html(message_id="56", folder_id=INBOX_ID)
    with pytest.raises(ZohoBadRequest):
        client.read_html(message_id="../../accounts", folder_id=INBOX_ID)
    assert not fake_zoho.mail_requests(r"accounts/accounts")


def test_list_recent_is_the_inbox_of_the_last_day(fake_zoho: FakeZoho, zoho_connection):
    now = timezone.now()
    fake_zoho.add_message(
        message_id="1", subject="nuevo", from_address="a@x.es", received=now - timedelta(hours=2)
    )
    fake_zoho.add_message(
        message_id="2", subject="viejo", from_address="a@x.es", received=now - timedelta(hours=30)
    )
    fake_zoho.add_message(
        message_id="3", subject="enviado", from_address="me@x.es", folder_id=SENT_ID, received=now
    )
    fake_zoho.add_message(
        message_id="4",
        subject="más nuevo",
        from_address="b@x.es",
        received=now - timedelta(minutes=5),
    )

    recent = ZohoMailClient(zoho_connection).list_recent(since=now - timedelta(hours=24))

    assert [m.asunto for m in recent] == ["más nuevo", "nuevo"]
    view = fake_zoho.mail_requests(r"/messages/view$")[0]
    assert view.query["folderId"] == [INBOX_ID]
    assert view.query["limit"] == ["200"]


def test_account_id_resolved_once_and_cached_on_the_row(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection)
    assert client.account_id() == ACCOUNT_ID
    client.search(query="x")
    ZohoMailClient(reload(zoho_connection)).search(query="y")
    row = reload(zoho_connection)
    assert row.account_id == ACCOUNT_ID
    assert row.email == "rebecca@zylker.com"
    assert len(fake_zoho.mail_requests(r"^/api/accounts$")) == 1


def test_access_token_cached_until_expiry(fake_zoho: FakeZoho, zoho_connection):
    ZohoMailClient(zoho_connection).search(query="a")
    ZohoMailClient(reload(zoho_connection)).search(query="b")
    reset_token_cache()  # another process: the encrypted copy on the row serves
    ZohoMailClient(reload(zoho_connection)).search(query="c")
    assert len(fake_zoho.token_requests("refresh_token")) == 1

    row = reload(zoho_connection)
    row.access_token_expires_at = timezone.now() + timedelta(seconds=30)  # about to expire
    row.save()
    reset_token_cache()
    ZohoMailClient(row).search(query="d")
    assert len(fake_zoho.token_requests("refresh_token")) == 2


def test_access_token_stored_encrypted(fake_zoho: FakeZoho, zoho_connection):
    ZohoMailClient(zoho_connection).search(query="a")
    token = reload(zoho_connection).access_token
    assert token.startswith("1000.fake-access-")
    with all_tenants(), db.cursor() as cursor:
        cursor.execute(
            "SELECT access_token, refresh_token FROM correo_zohoconnection WHERE id = %s",
            [zoho_connection.pk],
        )
        stored = cursor.fetchone()
    assert token not in stored[0] and "fake-refresh-token" not in stored[1]


def test_rejected_access_token_is_refreshed_once_and_retried(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection)
    client.search(query="a")
    fake_zoho.expire_access_tokens()
    assert client.search(query="b") == []
    assert len(fake_zoho.token_requests("refresh_token")) == 2


def test_refreshes_are_throttled_per_connection(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection)
    for _ in range(8):
        client._access_token(force=True)
    with pytest.raises(ZohoRateLimited) as info:
        client._access_token(force=True)
    assert info.value.retry_after and 0 < info.value.retry_after <= 600
    assert len(fake_zoho.token_requests("refresh_token")) == 8  # the 9th never left
    # The cached token still serves calls.
    assert client.search(query="x") == []


def test_zoho_too_many_requests_blocks_further_refreshes(fake_zoho: FakeZoho, zoho_connection):
    fake_zoho.push_token(fake_zoho.token_error("rate_limited", status=200))
    client = ZohoMailClient(zoho_connection)
    with pytest.raises(ZohoRateLimited):
        client.search(query="x")
    with pytest.raises(ZohoRateLimited) as info:
        ZohoMailClient(reload(zoho_connection)).search(query="x")
    assert info.value.code == "refresh_blocked"
    assert len(fake_zoho.token_requests()) == 1


@pytest.mark.parametrize("status", [200, 400])
def test_revoked_refresh_token_is_an_auth_error_recorded_on_the_connection(
    fake_zoho: FakeZoho, zoho_connection, status: int
):
    fake_zoho.push_token(fake_zoho.token_error("invalid_code", status=status))
    with pytest.raises(ZohoAuthError) as info:
        ZohoMailClient(zoho_connection).search(query="x")
    assert info.value.code == "invalid_code"
    row = reload(zoho_connection)
    assert "invalid_code" in row.last_error
    assert row.last_error_at is not None
    assert row.access_token == ""


def test_auth_error_cleared_after_a_good_refresh(fake_zoho: FakeZoho, zoho_connection):
    fake_zoho.revoke()
    with pytest.raises(ZohoAuthError):
        ZohoMailClient(zoho_connection).search(query="x")
    fake_zoho.refresh_tokens.add(zoho_connection.refresh_token)
    ZohoMailClient(reload(zoho_connection)).search(query="x")
    assert reload(zoho_connection).last_error == ""


def test_bad_client_secret_is_not_configured(fake_zoho: FakeZoho, zoho_connection, settings):
    settings.ZOHO_CLIENT_SECRET = "wrong"
    with pytest.raises(ZohoNotConfigured):
        ZohoMailClient(zoho_connection).search(query="x")
    settings.ZOHO_CLIENT_ID = None
    with pytest.raises(ZohoNotConfigured):
        ZohoMailClient(zoho_connection).search(query="x")


def test_not_connected(fake_zoho: FakeZoho, zoho_connection):
    zoho_connection.refresh_token = ""
    with pytest.raises(ZohoNotConnected):
        ZohoMailClient(zoho_connection).search(query="x")
    assert fake_zoho.server.requests == []


def test_missing_scope_is_an_auth_error(fake_zoho: FakeZoho, zoho_connection):
    ZohoMailClient(zoho_connection).account_id()
    fake_zoho.push_mail(FakeResponse.json(payload("error_invalid_oauthscope"), status=200))
    with pytest.raises(ZohoAuthError) as info:
        ZohoMailClient(reload(zoho_connection)).search(query="x")
    assert info.value.code == "INVALID_OAUTHSCOPE"
    assert "INVALID_OAUTHSCOPE" in reload(zoho_connection).last_error


def test_error_envelope_with_http_200(fake_zoho: FakeZoho, zoho_connection):
    ZohoMailClient(zoho_connection).account_id()
    fake_zoho.push_mail(FakeResponse.json(payload("error_pattern_not_matched"), status=200))
    with pytest.raises(ZohoBadRequest) as info:
        ZohoMailClient(reload(zoho_connection)).search(query="x")
    assert info.value.code == "PATTERN_NOT_MATCHED"


def test_server_errors_retried_once_then_unavailable(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection)
    client.account_id()
    fake_zoho.push_mail(mail_error(500, "INTERNAL", "Internal Error"))
    assert client.search(query="x") == []  # the retry succeeded
    fake_zoho.push_mail(mail_error(500, "INTERNAL"), mail_error(503, "INTERNAL"))
    with pytest.raises(ZohoUnavailable):
        client.search(query="x")


def test_rate_limited_by_the_mail_api(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection)
    client.account_id()
    fake_zoho.push_mail(
        FakeResponse.json({"error": "too many"}, status=429, headers={"Retry-After": "30"})
    )
    with pytest.raises(ZohoRateLimited) as info:
        client.search(query="x")
    assert info.value.retry_after == 30


def test_timeouts_are_typed(fake_zoho: FakeZoho, zoho_connection):
    client = ZohoMailClient(zoho_connection, timeout=(1.0, 0.2))
    client.account_id()
    fake_zoho.push_mail(FakeResponse.json({}, delay=0.6))
    with pytest.raises(ZohoTimeout):
        client.search(query="x")


def test_unreachable_zoho_is_unavailable(fake_zoho: FakeZoho, zoho_connection, settings):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.ZOHO_ACCOUNTS_BASE_URL = f"http://127.0.0.1:{port}"
    with pytest.raises(ZohoUnavailable):
        ZohoMailClient(zoho_connection).search(query="x")


def test_tokens_never_logged(fake_zoho: FakeZoho, zoho_connection, caplog):
    caplog.set_level("DEBUG")
    fake_zoho.add_message(
        message_id="9", subject="Hola", from_address="a@b.es", html="<p>SECRETO_CUERPO</p>"
    )
    client = ZohoMailClient(zoho_connection)
    client.read_html(message_id="9", folder_id=INBOX_ID)
    token = reload(zoho_connection).access_token
    logged = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
    assert token not in logged
    assert "fake-refresh-token" not in logged
    assert "SECRETO_CUERPO" not in logged


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"query": "factura marzo"}, 'entire:"factura marzo"'),
        ({"sender": "Hetzner <alerts@hetzner.de>"}, "sender:alerts@hetzner.de"),
        ({"subject": "Re: pedido"}, 'subject:"Re pedido"'),
        ({"query": "x::entire:secret"}, 'entire:"x entire secret"'),
        ({"query": 'a" :or: has:attachment "b'}, 'entire:"a or has attachment b"'),
        ({"query": "in:Spam inclspamtrash:true"}, 'entire:"in Spam inclspamtrash true"'),
        ({"query": "(fromDate:01-Jan-2020)"}, 'entire:"fromDate 01-Jan-2020"'),
        ({"query": "x：：sender：evil"}, 'entire:"x sender evil"'),  # full-width colons
        ({"query": "a\u200b:\u200bb\nsubject:c"}, 'entire:"a b subject c"'),
        ({"subject": '*\\"}{[]<>'}, ""),
        (
            {"query": "hola", "sender": "a@b.es", "subject": "Alta"},
            "entire:hola::sender:a@b.es::subject:Alta",
        ),
        ({"query": "x" * 500}, "entire:" + "x" * 100),
    ],
)
def test_search_key_cannot_be_injected(kwargs, expected):
    key = build_search_key(**kwargs)
    assert key == expected
    # Whatever the input, every term is field:value with no further operator.
    for term in filter(None, key.split("::")):
        field, _, value = term.partition(":")
        assert field in {"entire", "sender", "subject"}
        assert ":" not in value
        assert value.count('"') in (0, 2)


def test_hostile_search_input_reaches_zoho_as_one_safe_term(fake_zoho: FakeZoho, zoho_connection):
    ZohoMailClient(zoho_connection).search(
        query='foo::sender:ceo@acme.example" OR "', subject="x:y"
    )
    assert fake_zoho.search_keys() == ['entire:"foo sender ceo@acme.example OR"::subject:"x y"']


def test_token_endpoint_failures_are_typed(fake_zoho: FakeZoho, zoho_connection):
    fake_zoho.push_token(FakeResponse.json({}, status=502))
    with pytest.raises(ZohoUnavailable):
        ZohoMailClient(zoho_connection).search(query="x")
    fake_zoho.push_token(FakeResponse.json({}, delay=0.6))
    with pytest.raises(ZohoTimeout):
        ZohoMailClient(zoho_connection, timeout=(1.0, 0.2)).search(query="x")
    assert reload(zoho_connection).last_error == ""  # not the member's fault: no reconnect asked


def test_concurrent_refresh_adopts_the_other_workers_token(fake_zoho: FakeZoho, zoho_connection):
    from django.core.cache import cache

    ZohoMailClient(zoho_connection).account_id()  # one refresh; the row has a token
    stale = reload(zoho_connection)
    good_token = stale.access_token
    stale.access_token, stale.access_token_expires_at = "", None  # this worker's view: none
    reset_token_cache()
    cache.add(f"correo:zoho:refresh-lock:{zoho_connection.pk}", 1, 20)  # another is refreshing

    ZohoMailClient(stale).search(query="x")

    assert len(fake_zoho.token_requests("refresh_token")) == 1
    search = fake_zoho.mail_requests(r"/messages/search$")[0]
    assert search.header("authorization") == f"Zoho-oauthtoken {good_token}"

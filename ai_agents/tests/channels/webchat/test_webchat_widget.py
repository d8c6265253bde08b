"""What a site embedding the chat meets first: `/widget.js`, CORS only for the binding's origins,
the demo page, and the visitor's own address behind trusted proxies."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from django.test import Client

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.models import ChannelBinding, Conversation
from ai_agents.tests.channels.webchat.support import ORIGIN, Visitor
from erp.testing.fixtures import Persona

# --- /widget.js ---------------------------------------------------------------------------


def test_widget_script_is_served_small_cacheable_and_without_eval(client: Client) -> None:
    response = client.get("/widget.js")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert "max-age=86400" in response["Cache-Control"]
    body = response.content.decode()
    # (the survey, notices and typing of issue 16 took it from 18.5 KB to 24.3 KB; the
    # appearance, /config and phone layout of issue 17 to 27.7 KB; the option chips of issue
    # 18 to 29.6 KB)
    assert len(response.content) < 30_000
    assert "Content-Encoding" not in response  # this client did not ask for gzip
    assert "eval(" not in body and "new Function" not in body and "innerHTML" not in body
    assert "adoptedStyleSheets" in body and 'role: "dialog"' in body
    again = client.get("/widget.js", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304

    # What browsers download: gzip, under 9.7 KB (9.5 with issue 18's chips), the same script
    # once decoded.
    zipped = client.get("/widget.js", HTTP_ACCEPT_ENCODING="br, gzip, deflate")
    assert zipped["Content-Encoding"] == "gzip" and "Accept-Encoding" in zipped["Vary"]
    assert len(zipped.content) < 9_700
    assert gzip.decompress(zipped.content).decode() == body
    assert zipped["ETag"] != response["ETag"]
    assert client.get("/widget.js", HTTP_IF_NONE_MATCH=zipped["ETag"]).status_code == 200
    refused = client.get("/widget.js", HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
    assert "Content-Encoding" not in refused and refused.content == response.content


# --- origins and CORS ---------------------------------------------------------------------


@pytest.mark.django_db
def test_preflight_and_responses_echo_only_allowed_origins(binding: ChannelBinding) -> None:
    client = Client()
    url = f"/api/webchat/{binding.token}/messages"
    ok = client.options(
        url, HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_HEADERS="x-webchat-token"
    )
    assert ok.status_code == 204
    assert ok["Access-Control-Allow-Origin"] == ORIGIN
    assert "X-Webchat-Token" in ok["Access-Control-Allow-Headers"]
    assert "Origin" in ok["Vary"]
    assert "Access-Control-Allow-Credentials" not in ok

    sub = client.options(url, HTTP_ORIGIN="https://www.acme.example")
    assert sub["Access-Control-Allow-Origin"] == "https://www.acme.example"

    for bad in ("https://evil.example", "http://shop.example", "https://shop.example.evil.test"):
        denied = client.options(url, HTTP_ORIGIN=bad)
        assert denied.status_code == 403
        assert denied.json()["error"]["code"] == "origin_not_allowed"
        assert "Access-Control-Allow-Origin" not in denied
        started = Visitor(binding, origin=bad).start()
        assert started.status_code == 403
    assert Conversation.objects.unscoped().count() == 0

    missing = Client().options("/api/webchat/no-such-key/messages", HTTP_ORIGIN=ORIGIN)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_an_inactive_binding_is_not_found(binding: ChannelBinding) -> None:
    ChannelBinding.objects.unscoped().filter(pk=binding.pk).update(is_active=False)
    assert Visitor(binding).start().status_code == 404


# --- demo page ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_demo_page_is_for_the_tenants_staff_with_a_strict_csp(
    binding: ChannelBinding, owner: Persona, outsider: Persona
) -> None:
    anonymous = Client().get(f"/webchat/demo?key={binding.token}")
    assert anonymous.status_code == 302

    staff = Client()
    staff.force_login(owner.user)
    page = staff.get(f"/webchat/demo?key={binding.token}")
    assert page.status_code == 200
    assert "script-src 'self'" in page["Content-Security-Policy"]
    assert "'unsafe-inline'" not in page["Content-Security-Policy"]
    html = page.content.decode()
    assert f'<script src="/widget.js" data-key="{binding.token}"' in html
    assert "<style" not in html and "style=" not in html

    other = Client()
    other.force_login(outsider.user)
    assert other.get(f"/webchat/demo?key={binding.token}").status_code == 404


@pytest.mark.django_db
def test_behind_a_proxy_the_ip_limit_counts_each_visitors_own_address(
    binding: ChannelBinding, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.TRUSTED_PROXY_HOPS = 1
    monkeypatch.setattr(webchat, "IP_SESSIONS", (1, 600))

    def visitor_from(address: str, spoofed: str = "") -> Visitor:
        visitor = Visitor(binding)
        forwarded = f"{spoofed}, {address}" if spoofed else address
        visitor.client.defaults["HTTP_X_FORWARDED_FOR"] = forwarded
        return visitor

    # Every request comes from the proxy (REMOTE_ADDR 127.0.0.1): the limit follows the
    # address the proxy saw, not the proxy's.
    assert visitor_from("203.0.113.7").start().status_code == 200
    assert visitor_from("198.51.100.9").start().status_code == 200
    assert visitor_from("203.0.113.7").start().status_code == 429
    # What the client itself put in front of the header is not trusted.
    assert visitor_from("203.0.113.7", spoofed="192.0.2.1").start().status_code == 429


def test_client_ip_reads_only_the_trusted_hops(settings: Any) -> None:
    from django.test import RequestFactory

    from erp.http_request import client_ip

    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.7, 10.0.0.1"
    )
    settings.TRUSTED_PROXY_HOPS = 0
    assert client_ip(request) == "10.0.0.2"
    settings.TRUSTED_PROXY_HOPS = 1
    assert client_ip(request) == "10.0.0.1"
    settings.TRUSTED_PROXY_HOPS = 2
    assert client_ip(request) == "203.0.113.7"
    settings.TRUSTED_PROXY_HOPS = 5  # fewer entries than proxies: the nearest known address
    assert client_ip(request) == "10.0.0.2"


def test_without_trusted_proxies_a_forwarded_scheme_is_ignored() -> None:
    from django.test import RequestFactory

    request = RequestFactory().get("/", HTTP_X_FORWARDED_PROTO="https")
    assert request.is_secure() is False  # TRUSTED_PROXY_HOPS=0: the client speaks for itself


@pytest.mark.django_db
def test_an_origin_with_an_impossible_port_is_refused_not_a_500(binding: ChannelBinding) -> None:
    visitor = Visitor(binding, origin="https://shop.example:99999")

    preflight = visitor.client.options(
        f"/api/webchat/{binding.token}/sessions", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"
    )
    session = visitor.start()

    assert preflight.status_code == 403
    assert session.status_code == 403
    assert session.json()["error"]["code"] == "origin_not_allowed"
    assert "Access-Control-Allow-Origin" not in session
    assert visitor.token == ""

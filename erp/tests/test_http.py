import ipaddress
import logging
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from erp.http.client import HttpClient
from erp.http.errors import (
    HttpBlockedDestination,
    HttpClientError,
    HttpConnectionError,
    HttpError,
    HttpRateLimited,
    HttpResponseTooLarge,
    HttpServerError,
    HttpTimeout,
    parse_retry_after,
)
from erp.http.guard import address_blocked_reason
from erp.testing.fake_http import FakeResponse, FakeServer

SECRET = "s3cr3t-VALUE-do-not-log"


@pytest.fixture(scope="module")
def _shared_server():
    # One server per module: FakeServer.stop() waits out serve_forever's 0.5 s poll.
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def server(_shared_server):
    _shared_server.routes = []
    _shared_server.requests.clear()
    _shared_server.route("GET", r"/ok", FakeResponse.json({"ok": True}))
    return _shared_server


def _port(server: FakeServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


# --- connections ---------------------------------------------------------------------------


class _KeptAlive(HttpClient):
    keep_alive = True


def test_a_keep_alive_client_reuses_one_connection_across_instances(server):
    """Clients made per message (the Graph API's, one per reply) share the process's pool:
    one TCP (and TLS) handshake for many calls; other clients open their own each time."""
    for client_class in (_KeptAlive, _KeptAlive, _KeptAlive, HttpClient, HttpClient):
        assert client_class(base_url=server.url).get("/ok").json() == {"ok": True}
    peers = [request.peer for request in server.requests_snapshot()]
    assert len(peers) == 5 and peers[0] == peers[1] == peers[2]
    assert len({peers[0], peers[3], peers[4]}) == 3


def test_kept_connections_are_probed_while_idle(server):
    """TCP keepalive on kept connections: a NAT that drops idle flows silently keeps them, and a
    dead peer is found before a send waits out its read timeout."""
    client = _KeptAlive(base_url=server.url)
    assert client.get("/ok").json() == {"ok": True}
    manager = client._adapter.poolmanager
    keys = manager.pools.keys()  # urllib3 refuses to iterate its container itself
    pools = [manager.pools[key] for key in keys]
    kept = [c for p in pools for c in list(p.pool.queue) if c is not None and c.sock is not None]
    assert kept  # the connection went back to the pool, open
    for connection in kept:
        assert connection.sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert connection.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30


def test_a_kept_connection_the_server_closed_is_replaced(server):
    server.route("GET", r"/bye", FakeResponse.json({"bye": True}, headers={"Connection": "close"}))
    assert _KeptAlive(base_url=server.url).get("/bye").json() == {"bye": True}
    assert _KeptAlive(base_url=server.url).get("/ok").json() == {"ok": True}
    first, second = server.requests_snapshot()
    assert first.peer != second.peer


# --- timeouts, connection, status taxonomy ------------------------------------------------------
def test_read_timeout_raises_http_timeout_quickly(server):
    server.route("GET", r"/slow", FakeResponse.json({}, delay=10.0))
    client = HttpClient(base_url=server.url, timeout=(1.0, 0.2))

    started = time.monotonic()
    with pytest.raises(HttpTimeout) as info:
        client.get("/slow")

    assert time.monotonic() - started < 3  # the server would answer after 10 s
    assert info.value.retryable is True


def test_per_call_timeout_overrides_the_default(server, settings):
    settings.HTTP_DEFAULT_TIMEOUT_SECONDS = 0.1
    server.route("GET", r"/slow", FakeResponse.json({"late": True}, delay=0.3))
    client = HttpClient(base_url=server.url)

    with pytest.raises(HttpTimeout):
        client.get("/slow")
    assert client.get("/slow", timeout=2.0).json() == {"late": True}


def test_connection_refused_is_a_retryable_connection_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on `port` any more.
    with pytest.raises(HttpConnectionError) as info:
        HttpClient().get(f"http://127.0.0.1:{port}/", timeout=2)
    assert info.value.retryable is True


def test_429_carries_retry_after_seconds(server):
    server.route("GET", r"/busy", FakeResponse.json({}, status=429, headers={"Retry-After": "7"}))

    with pytest.raises(HttpRateLimited) as info:
        HttpClient(base_url=server.url).get("/busy")

    assert (info.value.status, info.value.retry_after, info.value.retryable) == (429, 7.0, True)


def test_retry_after_http_date_is_parsed():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    header = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(header, now=now) == 30.0
    assert parse_retry_after("garbage") is None
    assert parse_retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now=now) == 0


def test_4xx_is_permanent_with_status_and_truncated_body(server):
    server.route("POST", r"/bad", FakeResponse(status=422, body=b"x" * 10_000))

    with pytest.raises(HttpClientError) as info:
        HttpClient(base_url=server.url).post("/bad", json={})

    error = info.value
    assert (error.status, error.retryable) == (422, False)
    assert len(error.body) <= 2001 and error.body.startswith("xxx")


def test_5xx_is_retryable_server_error(server):
    server.route("GET", r"/down", FakeResponse.json({"error": "boom"}, status=503))

    with pytest.raises(HttpServerError) as info:
        HttpClient(base_url=server.url).get("/down")

    assert (info.value.status, info.value.retryable) == (503, True)


def test_non_raising_mode_returns_the_response(server):
    server.route("GET", r"/gone", FakeResponse.json({"e": 1}, status=404))
    response = HttpClient(base_url=server.url).get("/gone", raise_for_status=False)
    assert (response.status, response.json()) == (404, {"e": 1})


# --- redirects, size cap --------------------------------------------------------------------------
def test_redirects_are_not_followed_by_default(server):
    server.route("GET", r"/moved", FakeResponse(status=302, headers={"Location": "/ok"}))

    response = HttpClient(base_url=server.url).get("/moved")

    assert response.status == 302
    assert server.requests_to(r"^/ok$") == []


def test_redirects_followed_on_request_drop_credentials_across_origins(server):
    with FakeServer() as other:
        other.route("GET", r"/there", FakeResponse.json({"there": True}))
        server.route("GET", r"/same", FakeResponse(status=302, headers={"Location": "/ok"}))
        server.route(
            "GET", r"/away", FakeResponse(status=307, headers={"Location": f"{other.url}/there"})
        )
        client = HttpClient(base_url=server.url, headers={"Authorization": f"Bearer {SECRET}"})

        assert client.get("/same", follow_redirects=True).json() == {"ok": True}
        assert client.get("/away", follow_redirects=True).json() == {"there": True}

        assert server.requests_to(r"^/ok$")[0].header("authorization") == f"Bearer {SECRET}"
        assert other.requests[0].header("authorization") is None


def test_response_size_cap_with_content_length(server):
    server.route("GET", r"/big", FakeResponse(body=b"a" * 5000))
    client = HttpClient(base_url=server.url, max_bytes=1000)

    with pytest.raises(HttpResponseTooLarge):
        client.get("/big")
    assert len(client.get("/big", max_bytes=5000).content) == 5000


def test_response_size_cap_while_streaming_chunks(server, settings):
    settings.HTTP_MAX_RESPONSE_BYTES = 1000
    server.route("GET", r"/stream", FakeResponse(chunks=[b"b" * 400] * 50))

    with pytest.raises(HttpResponseTooLarge) as info:
        HttpClient(base_url=server.url).get("/stream")
    assert info.value.retryable is False


# --- redaction --------------------------------------------------------------------------------
def test_logs_carry_method_redacted_url_status_and_never_secrets(server, caplog):
    server.route(
        "POST",
        r"/oauth/token",
        FakeResponse.json(
            {"error": "invalid_grant", "access_token": SECRET, "nested": {"refresh_token": SECRET}},
            status=400,
        ),
    )
    client = HttpClient(
        base_url=server.url, headers={"X-Api-Key": SECRET, "Cookie": f"session={SECRET}"}
    )
    caplog.set_level(logging.DEBUG, logger="erp.http")

    with pytest.raises(HttpClientError) as info:
        client.post(
            "/oauth/token",
            params={"key": SECRET, "code": SECRET, "page": "2"},
            json={"client_secret": SECRET, "refresh_token": SECRET},
            headers={"Authorization": f"Bearer {SECRET}", "x-goog-api-key": SECRET},
        )
    client.get("/ok", params={"access_token": SECRET, "token": SECRET})

    # The server did get the secrets (they are redacted in logs only).
    assert server.requests[0].query["key"] == [SECRET]
    records = [r for r in caplog.records if r.name == "erp.http"]
    assert [r.http_status for r in records] == [400, 200]
    assert records[0].http_method == "POST"
    assert "page=2" in records[0].http_url and "key=[REDACTED]" in records[0].http_url
    assert records[0].duration_ms >= 0
    for record in records:
        assert SECRET not in record.getMessage()
        assert all(SECRET not in str(value) for value in vars(record).values())
    assert SECRET not in str(info.value) and SECRET not in info.value.body
    assert "invalid_grant" in info.value.body


# --- SSRF guard -----------------------------------------------------------------------------------
BLOCKED_URLS = [
    "http://127.0.0.1:{port}/ok",
    "http://localhost:{port}/ok",
    "http://0x7f000001:{port}/ok",
    "http://2130706433:{port}/ok",
    "http://0177.0.0.1:{port}/ok",
    "http://[::1]:{port}/ok",
    "http://[::ffff:127.0.0.1]:{port}/ok",
    "http://[::ffff:7f00:1]:{port}/ok",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://0.0.0.0:{port}/ok",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[::]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:7f00:1::]/",
    "ftp://example.com/file",
    "file:///etc/passwd",
]


@pytest.mark.parametrize("template", BLOCKED_URLS)
def test_guard_refuses_non_public_destinations(server, template):
    url = template.format(port=_port(server))

    with pytest.raises(HttpBlockedDestination) as info:
        HttpClient(guard=True).get(url, timeout=1)

    assert info.value.retryable is False
    assert server.requests == []  # nothing reached the loopback server


def test_guard_can_be_set_per_call(server):
    client = HttpClient()
    assert client.get(f"{server.url}/ok").json() == {"ok": True}
    with pytest.raises(HttpBlockedDestination):
        client.get(f"{server.url}/ok", guard=True)


@pytest.mark.parametrize(
    "template",
    ["http://127.0.0.1:{port}/ok", "http://localhost:{port}/ok", "http://0x7f000001:{port}/ok"],
)
def test_guard_allows_private_networks_with_the_setting(server, settings, template):
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True
    url = template.format(port=_port(server))

    assert HttpClient(guard=True).get(url).json() == {"ok": True}


def test_guard_connects_to_the_checked_address_with_the_original_host(server, monkeypatch):
    # A rebinding resolver: first answer is what the guard checks; later lookups would differ.
    answers = iter(["127.0.0.1"] + ["10.9.9.9"] * 10)
    real = socket.getaddrinfo

    def rebinding(host, *args, **kw):
        if host == "tenant-api.test":
            ip = next(answers)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, args[0]))]
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)

    class LoopbackAllowed(HttpClient):
        guard = True

        def blocked_reason(self, ip):
            return None if ip.is_loopback else address_blocked_reason(ip)

    response = LoopbackAllowed().get(f"http://tenant-api.test:{_port(server)}/ok", timeout=2)

    assert response.json() == {"ok": True}
    assert server.requests[0].header("host") == f"tenant-api.test:{_port(server)}"


def test_guard_checks_every_redirect_hop(server):
    server.route(
        "GET", r"/hop", FakeResponse(status=302, headers={"Location": "http://169.254.169.254/"})
    )

    class LoopbackAllowed(HttpClient):
        def blocked_reason(self, ip):
            return None if ip.is_loopback else address_blocked_reason(ip)

    client = LoopbackAllowed(guard=True)
    with pytest.raises(HttpBlockedDestination) as info:
        client.get(f"{server.url}/hop", follow_redirects=True, timeout=1)
    assert "169.254.169.254" in str(info.value)


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("8.8.8.8", False),
        ("2606:4700:4700::1111", False),
        ("100.127.255.254", True),
        ("::ffff:10.0.0.1", True),
        ("::ffff:8.8.8.8", False),
        ("198.18.0.1", True),
    ],
)
def test_address_policy(address, blocked):
    assert (address_blocked_reason(ipaddress.ip_address(address)) is not None) is blocked


def test_every_error_is_an_http_error():
    for cls in (HttpTimeout, HttpConnectionError, HttpRateLimited, HttpClientError):
        assert issubclass(cls, HttpError)


def _self_signed(tmp_path, hostname):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_guard_pins_https_keeping_sni_and_certificate_hostname(tmp_path, monkeypatch):
    import ssl

    cert_path, key_path = _self_signed(tmp_path, "tenant-api.test")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    seen_sni: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    real = socket.getaddrinfo

    def resolver(host, *args, **kw):
        if host == "tenant-api.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", args[0]))]
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)

    class LoopbackAllowed(HttpClient):
        guard = True
        verify = str(cert_path)

        def blocked_reason(self, ip):
            return None if ip.is_loopback else address_blocked_reason(ip)

    with FakeServer() as tls_server:
        assert tls_server._httpd is not None
        tls_server._httpd.socket = context.wrap_socket(tls_server._httpd.socket, server_side=True)
        tls_server.route("GET", r"/ok", FakeResponse.json({"tls": True}))
        port = _port(tls_server)

        response = LoopbackAllowed().get(f"https://tenant-api.test:{port}/ok", timeout=2)
        with pytest.raises(HttpConnectionError) as info:
            LoopbackAllowed().get(f"https://127.0.0.1:{port}/ok", timeout=2)

    assert response.json() == {"tls": True}
    assert seen_sni[0] == "tenant-api.test"
    assert tls_server.requests[0].header("host") == f"tenant-api.test:{port}"
    assert info.value.retryable is False  # certificate does not match 127.0.0.1

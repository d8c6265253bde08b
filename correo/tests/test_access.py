# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""Cloudflare Access on /api/correo/ask: the published test vectors, then tokens we sign."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from correo import access, secretary
from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox  # noqa: F401
from erp.llm.gateway import RetryPolicy
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona

DATA = Path(__file__).parent / "data"
VECTORS = json.loads((DATA / "cloudflare_access_test_vectors.json").read_text())
CERTS = json.loads((DATA / "cloudflare_access_certs.json").read_text())
URL = "/api/correo/ask"
AUD = "aud-tag-0123456789"
TEAM = "acme.cloudflareaccess.com"


@pytest.fixture
def jwks_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


# --- the published vectors ----------------------------------------------------------------


@pytest.fixture
def vector_settings(settings: Any, jwks_server: FakeServer) -> FakeServer:
    jwks_server.route("GET", r"/cdn-cgi/access/certs", FakeResponse.json(CERTS))
    settings.CF_ACCESS_TEAM_DOMAIN = VECTORS["team_domain"].removeprefix("https://")
    settings.CF_ACCESS_AUD = VECTORS["expected_aud"]
    settings.CF_ACCESS_CERTS_URL = jwks_server.url + "/cdn-cgi/access/certs"
    return jwks_server


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_published_vectors(vector_settings: FakeServer, case: dict[str, Any]):
    # A person is required: a service token (no email) is refused although its signature is good.
    expect = case["expect_valid"] and case["name"] != "valid_service_token_no_email"
    email = case.get("expect_email", "user@example.com")
    try:
        claims = access.verify(case.get("token") or "", email=email.upper())
    except access.AccessDenied:
        assert not expect, case["name"]
    else:
        assert expect, case["name"]
        assert claims["email"] == email


def test_keys_are_cached_and_fetched_again_for_an_unknown_kid(vector_settings: FakeServer):
    valid = next(c for c in VECTORS["cases"] if c["name"] == "valid_identity")
    rogue = next(c for c in VECTORS["cases"] if c["name"] == "unknown_kid_rogue_key")
    for _ in range(3):
        access.verify(valid["token"], email="user@example.com")
    assert len(vector_settings.requests) == 1  # cached

    for _ in range(3):
        with pytest.raises(access.AccessDenied):
            access.verify(rogue["token"], email="user@example.com")
    assert len(vector_settings.requests) == 2  # one refetch per interval, not one per request


# --- the endpoint, with our own keys ------------------------------------------------------


class Keys:
    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.good = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.good.public_key()))
        jwk.update({"kid": "kid-good", "alg": "RS256", "use": "sig"})
        server.route("GET", r"/cdn-cgi/access/certs", FakeResponse.json({"keys": [jwk]}))

    def token(self, *, key: Any = None, kid: str = "kid-good", **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "aud": [AUD],
            "email": "owner@acme.test",
            "exp": now + 600,
            "iat": now,
            "nbf": now,
            "iss": f"https://{TEAM}",
            "type": "app",
            "sub": "7335d417-61da-459d-899c-0a01c76a2f94",
        }
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(payload, key or self.good, algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def keys(settings: Any, jwks_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Keys:
    settings.CF_ACCESS_TEAM_DOMAIN = TEAM
    settings.CF_ACCESS_AUD = AUD
    settings.CF_ACCESS_CERTS_URL = jwks_server.url + "/cdn-cgi/access/certs"
    monkeypatch.setattr(secretary, "RETRY", RetryPolicy(timeout_s=2, attempts=2, base_delay_s=0))
    return Keys(jwks_server)


def ask(client: Any, token: str | None) -> Any:
    headers = {"HTTP_CF_ACCESS_JWT_ASSERTION": token} if token is not None else {}
    return client.post(
        URL, data=json.dumps({"question": "¿Hola?"}), content_type="application/json", **headers
    )


def test_valid_access_token_lets_the_member_ask(
    owner_client: Any, keys: Keys, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Hola."}))

    response = ask(owner_client, keys.token(email="Owner@ACME.test"))

    assert response.status_code == 200, response.content
    assert response.json()["answer"] == "Hola."


@pytest.mark.parametrize(
    "variant",
    [
        "missing",
        "expired",
        "wrong_audience",
        "wrong_key",
        "email_mismatch",
        "wrong_issuer",
        "hs256",
    ],
)
def test_invalid_access_token_is_403(
    owner_client: Any,
    keys: Keys,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
    variant: str,
):
    now = int(time.time())
    token = {
        "missing": None,
        "expired": keys.token(exp=now - 120, iat=now - 720, nbf=now - 720),
        "wrong_audience": keys.token(aud=["another-app"]),
        "wrong_key": keys.token(key=keys.other),
        "email_mismatch": keys.token(email="someone@else.test"),
        "wrong_issuer": keys.token(iss="https://evil.cloudflareaccess.com"),
        "hs256": jwt.encode({"aud": [AUD], "email": "owner@acme.test"}, "k" * 32, "HS256"),
    }[variant]

    response = ask(owner_client, token)

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "access_denied"
    assert fake_google.generate_requests == []


def test_access_is_not_required_when_not_configured(
    owner_client: Any, settings: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    settings.CF_ACCESS_TEAM_DOMAIN = ""
    settings.CF_ACCESS_AUD = ""
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Hola."}))

    assert ask(owner_client, None).status_code == 200


def test_access_token_alone_is_not_a_login(client: Any, owner: Persona, keys: Keys):
    assert ask(client, keys.token()).status_code == 401


def test_the_page_also_requires_the_access_token(owner_client: Any, keys: Keys):
    assert owner_client.get("/correo/").status_code == 403
    ok = owner_client.get("/correo/", HTTP_CF_ACCESS_JWT_ASSERTION=keys.token())
    assert ok.status_code == 200

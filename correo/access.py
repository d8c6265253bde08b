"""Cloudflare Access: verifying `Cf-Access-Jwt-Assertion` at the origin.

On when `CF_ACCESS_TEAM_DOMAIN` and `CF_ACCESS_AUD` are set. The token must be RS256-signed
by one of the team's keys (`https://<team>/cdn-cgi/access/certs`, or `CF_ACCESS_CERTS_URL`),
name our AUD tag, have issuer `https://<team>`, be within `nbf`/`exp` (small leeway) and carry
the logged-in user's email. The JWKS is cached in the shared cache and fetched again on an
unknown `kid`, at most once per `REFETCH_INTERVAL_S`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import jwt
from django.conf import settings
from django.core.cache import cache

from erp.http.client import HttpClient
from erp.http.errors import HttpError

logger = logging.getLogger(__name__)

HEADER = "Cf-Access-Jwt-Assertion"
JWKS_TTL_S = 3600
REFETCH_INTERVAL_S = 30
LEEWAY_S = 30


class AccessDenied(Exception):
    """The token is missing or invalid; `reason` is a short machine word (safe to log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def enabled() -> bool:
    return bool(settings.CF_ACCESS_TEAM_DOMAIN and settings.CF_ACCESS_AUD)


def team_origin() -> str:
    domain = settings.CF_ACCESS_TEAM_DOMAIN.strip().rstrip("/")
    if not domain.startswith(("https://", "http://")):
        domain = f"https://{domain}"
    return domain


def certs_url() -> str:
    return settings.CF_ACCESS_CERTS_URL or f"{team_origin()}/cdn-cgi/access/certs"


def _cache_key() -> str:
    return f"correo:cf_access:jwks:{certs_url()}"


def _fetch_jwks() -> dict[str, Any]:
    try:
        response = HttpClient(timeout=(3.0, 5.0)).get(certs_url())
        data = response.json()
    except (HttpError, ValueError) as exc:
        logger.warning("cf_access.jwks_fetch_failed", extra={"error": type(exc).__name__})
        raise AccessDenied("jwks_unavailable") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise AccessDenied("jwks_invalid")
    cache.set(_cache_key(), data, timeout=JWKS_TTL_S)
    return data


def _key_for(kid: str) -> Any:
    jwks = cache.get(_cache_key())
    if jwks is None:
        jwks = _fetch_jwks()
    elif not _find(jwks, kid) and cache.add(
        f"{_cache_key()}:refetch", 1, timeout=REFETCH_INTERVAL_S
    ):
        jwks = _fetch_jwks()  # rotated keys: look again, at most once per interval
    jwk = _find(jwks, kid)
    if jwk is None:
        raise AccessDenied("unknown_key")
    try:
        return jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(jwk))
    except (ValueError, TypeError, jwt.InvalidKeyError):
        raise AccessDenied("bad_key") from None


def _find(jwks: dict[str, Any], kid: str) -> dict[str, Any] | None:
    for jwk in jwks.get("keys", []):
        if isinstance(jwk, dict) and jwk.get("kid") == kid:
            return jwk
    return None


def verify(token: str, *, email: str) -> dict[str, Any]:
    """The token's claims if it is valid for this application and `email`; else AccessDenied."""
    if not token:
        raise AccessDenied("missing")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise AccessDenied("malformed") from None
    if header.get("alg") != "RS256":
        raise AccessDenied("algorithm")
    key = _key_for(str(header.get("kid") or ""))
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key=key,
            algorithms=["RS256"],
            audience=settings.CF_ACCESS_AUD,
            issuer=team_origin(),
            leeway=LEEWAY_S,
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.ExpiredSignatureError:
        raise AccessDenied("expired") from None
    except jwt.ImmatureSignatureError:
        raise AccessDenied("not_yet_valid") from None
    except jwt.InvalidAudienceError:
        raise AccessDenied("audience") from None
    except jwt.InvalidIssuerError:
        raise AccessDenied("issuer") from None
    except jwt.InvalidSignatureError:
        raise AccessDenied("signature") from None
    except jwt.PyJWTError:
        raise AccessDenied("invalid") from None
    token_email = claims.get("email")
    if not isinstance(token_email, str) or not token_email:
        raise AccessDenied("no_email")  # a service token: a person is required here
    if token_email.strip().casefold() != (email or "").strip().casefold():
        raise AccessDenied("email_mismatch")
    return claims

"""Zoho accounts server: consent URL, code exchange, refresh (throttled), data-centre hosts.

Token errors often come back with HTTP 200 and an `error` key (`invalid_code` for a revoked
refresh token, `invalid_client_secret`, ...); "too many requests" comes as `"error": "Access
Denied"` with 200 or 400. Zoho blocks more than 10 refreshes per refresh token in 10 minutes and
the block lasts 15-30 minutes, so refreshes are counted per connection in the shared cache
(Redis): past `REFRESH_MAX_PER_WINDOW` in a window, or while Zoho's block is believed to last,
`ZohoRateLimited` is raised without calling.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.cache import cache

from correo.zoho.errors import (
    ZohoAuthError,
    ZohoNotConfigured,
    ZohoRateLimited,
    ZohoTimeout,
    ZohoUnavailable,
)
from correo.zoho.schemas import TokenGrant
from erp.http.client import HttpClient
from erp.http.errors import HttpError, HttpTimeout

logger = logging.getLogger("correo.zoho")

SCOPES = "ZohoMail.messages.READ,ZohoMail.accounts.READ,ZohoMail.folders.READ"
ACCOUNTS_TIMEOUT = (5.0, 15.0)
REFRESH_WINDOW_SECONDS = 600
REFRESH_MAX_PER_WINDOW = 8  # Zoho blocks past 10 per 10 minutes: keep a margin
ZOHO_BLOCK_SECONDS = 900  # after Zoho's own "too many requests": stay away this long

# Data centre -> (accounts server, mail API host).
DATA_CENTRES: dict[str, tuple[str, str]] = {
    "com": ("https://accounts.zoho.com", "https://mail.zoho.com"),
    "eu": ("https://accounts.zoho.eu", "https://mail.zoho.eu"),
    "in": ("https://accounts.zoho.in", "https://mail.zoho.in"),
    "com.au": ("https://accounts.zoho.com.au", "https://mail.zoho.com.au"),
    "jp": ("https://accounts.zoho.jp", "https://mail.zoho.jp"),
    "ca": ("https://accounts.zohocloud.ca", "https://mail.zohocloud.ca"),
    "sa": ("https://accounts.zoho.sa", "https://mail.zoho.sa"),
    "com.cn": ("https://accounts.zoho.com.cn", "https://mail.zoho.com.cn"),
}
_TOO_MANY = ("too many requests", "access denied")


def client_credentials() -> tuple[str, str]:
    client_id, secret = settings.ZOHO_CLIENT_ID, settings.ZOHO_CLIENT_SECRET
    if not client_id or not secret:
        raise ZohoNotConfigured(
            "ZOHO_CLIENT_ID and ZOHO_CLIENT_SECRET are not set", code="not_configured"
        )
    return client_id, secret


def hosts_for_data_centre(data_centre: str) -> tuple[str, str]:
    """(accounts server, mail host) of a data centre; ValueError when unknown."""
    try:
        return DATA_CENTRES[data_centre.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown Zoho data centre {data_centre!r}") from None


def known_accounts_server(url: str) -> str | None:
    """`url` normalised when it is a Zoho accounts server we know (or the configured one)."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return None
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    allowed = {a for a, _m in DATA_CENTRES.values()} | {
        settings.ZOHO_ACCOUNTS_BASE_URL.rstrip("/").lower()
    }
    return origin if origin in allowed else None


def mail_host_for(accounts_server: str) -> str:
    for accounts, mail in DATA_CENTRES.values():
        if accounts == accounts_server:
            return mail
    return settings.ZOHO_MAIL_BASE_URL.rstrip("/")


def consent_url(*, accounts_server: str, redirect_uri: str, state: str) -> str:
    client_id, _secret = client_credentials()
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "scope": SCOPES,
            "redirect_uri": redirect_uri,
            "access_type": "offline",
            "prompt": "consent",
            "state": state,
        }
    )
    return f"{accounts_server.rstrip('/')}/oauth/v2/auth?{query}"


class ZohoAccountsClient(HttpClient):
    """`POST {accounts}/oauth/v2/token`: code exchange and refresh."""

    def __init__(self, *, base_url: str, timeout: tuple[float, float] | None = None) -> None:
        super().__init__(base_url=base_url.rstrip("/"), timeout=timeout or ACCOUNTS_TIMEOUT)

    def exchange_code(self, *, code: str, redirect_uri: str) -> TokenGrant:
        client_id, secret = client_credentials()
        grant = self._token(
            {
                "grant_type": "authorization_code",
                "client_id": client_id,
                "client_secret": secret,
                "redirect_uri": redirect_uri,
                "code": code,
            }
        )
        if not grant.refresh_token:
            raise ZohoAuthError(
                "Zoho returned no refresh token (consent without offline access)",
                code="no_refresh_token",
            )
        return grant

    def refresh(self, *, refresh_token: str, throttle_key: str) -> TokenGrant:
        """A new access token; counted against the per-connection throttle."""
        client_id, secret = client_credentials()
        refresh_throttle_check(throttle_key)
        try:
            return self._token(
                {
                    "grant_type": "refresh_token",
                    "client_id": client_id,
                    "client_secret": secret,
                    "refresh_token": refresh_token,
                }
            )
        except ZohoRateLimited:
            cache.set(
                _blocked_key(throttle_key), time.time() + ZOHO_BLOCK_SECONDS, ZOHO_BLOCK_SECONDS
            )
            raise

    def _token(self, form: dict[str, str]) -> TokenGrant:
        try:
            response = self.post("/oauth/v2/token", data=form, raise_for_status=False)
        except HttpTimeout:
            raise ZohoTimeout("Zoho accounts server timed out", code="timeout") from None
        except HttpError as error:
            raise ZohoUnavailable(
                f"Zoho accounts server unreachable: {type(error).__name__}", code="unavailable"
            ) from None
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        if body.get("error") or response.status >= 400:
            raise _token_error(response.status, body)
        access_token = body.get("access_token")
        if not isinstance(access_token, str) or not access_token:
            raise ZohoUnavailable("Zoho token answer without an access token", code="bad_answer")
        try:
            expires_in = int(body.get("expires_in") or 3600)
        except (TypeError, ValueError):
            expires_in = 3600
        return TokenGrant(
            access_token=access_token,
            expires_in=expires_in,
            refresh_token=str(body.get("refresh_token") or ""),
            scope=str(body.get("scope") or ""),
            api_domain=str(body.get("api_domain") or ""),
        )


def _token_error(status: int, body: dict[str, Any]) -> Exception:
    error = str(body.get("error") or "")
    description = str(body.get("error_description") or "")
    lowered = f"{error} {description}".lower()
    # "too many requests" is localised; its envelope alone ("status": "failure") tells it.
    if (
        status == 429
        or any(marker in lowered for marker in _TOO_MANY)
        or str(body.get("status") or "").lower() == "failure"
    ):
        return ZohoRateLimited(
            "Zoho refused: too many token requests",
            code="too_many_requests",
            retry_after=ZOHO_BLOCK_SECONDS,
        )
    if error in {"invalid_client", "invalid_client_secret", "invalid_redirect_uri"}:
        return ZohoNotConfigured(f"Zoho rejected the OAuth client: {error}", code=error)
    if error:
        return ZohoAuthError(f"Zoho rejected the token: {error}", code=error)
    if status >= 500:
        return ZohoUnavailable(f"Zoho accounts server answered {status}", code="unavailable")
    return ZohoAuthError(f"Zoho accounts server answered {status}", code=f"http_{status}")


# --- Throttle ------------------------------------------------------------------------------
def _window_key(key: str, now: float) -> str:
    return f"correo:zoho:refresh:{key}:{int(now // REFRESH_WINDOW_SECONDS)}"


def _blocked_key(key: str) -> str:
    return f"correo:zoho:refresh-blocked:{key}"


def refresh_throttle_check(key: str) -> None:
    """Counts one refresh for `key`; raises ZohoRateLimited (without counting) when over."""
    now = time.time()
    blocked_until = cache.get(_blocked_key(key))
    if blocked_until and blocked_until > now:
        raise ZohoRateLimited(
            "Zoho blocked token refreshes for this mailbox; waiting",
            code="refresh_blocked",
            retry_after=blocked_until - now,
        )
    window = _window_key(key, now)
    cache.add(window, 0, REFRESH_WINDOW_SECONDS + 5)
    try:
        count = cache.incr(window)
    except ValueError:  # expired between add and incr
        cache.set(window, 1, REFRESH_WINDOW_SECONDS + 5)
        count = 1
    if count > REFRESH_MAX_PER_WINDOW:
        retry_after = REFRESH_WINDOW_SECONDS - (now % REFRESH_WINDOW_SECONDS)
        logger.warning("correo.zoho.refresh_throttled", extra={"zoho_connection": key})
        raise ZohoRateLimited(
            "too many token refreshes for this mailbox",
            code="refresh_throttled",
            retry_after=retry_after,
        )

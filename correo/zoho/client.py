"""Zoho Mail API client for one staff member's mailbox (read-only).

    client = ZohoMailClient(connection)
    client.search(sender="alerts@hetzner.de")          -> list[MailSummary] (at most 10)
    client.read_html(message_id=..., folder_id=...)     -> the message's HTML
    client.list_recent(since=now - timedelta(hours=24)) -> inbox of the last day (digest)

Access tokens: the in-process cache, then the encrypted copy on the connection row, then a
refresh (throttled per connection, see `oauth`); a token Zoho rejects (401 INVALID_OAUTHTOKEN)
is refreshed once and the call retried once. A refresh token Zoho rejects raises
`ZohoAuthError` and is recorded in `connection.last_error`: the member must reconnect.

Errors are typed (`correo.zoho.errors`); Zoho's envelopes are read whatever the HTTP status
(errors sometimes arrive with 200). Tokens, bodies and search keys are never logged.

Search keys: Zoho's syntax is `field:value` terms joined by `::`, with `"` for phrases and more
operators (`:or:`, `has:`, `in:`, `entire:` ...), and no escape mechanism. So user values are
reduced to plain words: NFKC-normalised (full-width colons become colons), invisible and control
characters dropped, and every `:`, `"`, `(`, `)`, `[`, `]`, `{`, `}`, `<`, `>`, `\\` and `*`
replaced by a space, whitespace collapsed, at most 100 characters. A value with spaces is then
quoted as a phrase. With colons and quotes gone, a value can never close its phrase, start a new
term or name an operator. A sender written as `Name <address>` is searched by its address.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from correo.models import ZohoConnection
from correo.zoho.errors import (
    ZohoAuthError,
    ZohoBadRequest,
    ZohoError,
    ZohoNotConnected,
    ZohoNotFound,
    ZohoRateLimited,
    ZohoTimeout,
    ZohoUnavailable,
)
from correo.zoho.oauth import ZohoAccountsClient
from correo.zoho.schemas import MailSummary, account_from, mail_summary, received_at
from erp.http.client import HttpClient
from erp.http.errors import HttpConnectionError, HttpError, HttpTimeout, parse_retry_after
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger("correo.zoho")

MAIL_TIMEOUT = (5.0, 15.0)
TOKEN_MARGIN_SECONDS = 120  # refresh this long before Zoho's expiry
REFRESH_LOCK_SECONDS = 20  # one refresh per mailbox at a time, across workers
REFRESH_WAIT_SECONDS = 3.0  # how long a second worker waits for the first one's token
SEARCH_TERM_CHARS = 100
MAX_LIMIT = 200
RETRY_DELAY_SECONDS = 0.3
FOLDER_CACHE_SECONDS = 24 * 3600
_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,100}$")
_OPERATOR_CHARS = re.compile(r'[:"()\[\]{}<>\\*]')
_INVISIBLE = re.compile(
    "[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_ADDRESS = re.compile(r"[A-Za-z0-9._%+'-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_AUTH_CODES = {"INVALID_OAUTHTOKEN", "INVALID_TICKET"}


@dataclass
class _CachedToken:
    fingerprint: str
    token: str
    expires_at: datetime


_tokens: dict[int, _CachedToken] = {}
_tokens_lock = threading.Lock()


def reset_token_cache() -> None:
    """Forget in-process access tokens (tests; a reconnect also changes the fingerprint)."""
    with _tokens_lock:
        _tokens.clear()


# --- Search key ----------------------------------------------------------------------------
def search_term(value: str | None) -> str:
    """A user value as plain words: no Zoho operator can survive (see the module docstring)."""
    if not value:
        return ""
    text = unicodedata.normalize("NFKC", str(value))
    text = _INVISIBLE.sub("", text)
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = _OPERATOR_CHARS.sub(" ", text)
    text = " ".join(text.split())
    return text[:SEARCH_TERM_CHARS].strip()


def build_search_key(
    *, query: str | None = None, sender: str | None = None, subject: str | None = None
) -> str:
    """`entire:…::sender:…::subject:…` from free text, sender and subject ('' when all empty)."""
    if sender:
        address = _ADDRESS.search(unicodedata.normalize("NFKC", sender))
        if address:
            sender = address.group(0)
    terms = []
    for field, value in (("entire", query), ("sender", sender), ("subject", subject)):
        term = search_term(value)
        if term:
            terms.append(f'{field}:"{term}"' if " " in term else f"{field}:{term}")
    return "::".join(terms)


def _path_id(value: str, name: str) -> str:
    value = (value or "").strip()
    if not _ID.match(value) or value in {".", ".."}:
        raise ZohoBadRequest(f"invalid {name}", code="invalid_id")
    return quote(value, safe="")


# --- Client --------------------------------------------------------------------------------
class ZohoMailClient(HttpClient):
    def __init__(
        self, connection: ZohoConnection, *, timeout: tuple[float, float] | None = None
    ) -> None:
        self.connection = connection
        base = connection.mail_base_url or settings.ZOHO_MAIL_BASE_URL
        super().__init__(base_url=base.rstrip("/"), timeout=timeout or MAIL_TIMEOUT)
        self.accounts_base_url = (
            connection.accounts_base_url or settings.ZOHO_ACCOUNTS_BASE_URL
        ).rstrip("/")
        self._timeout_arg = timeout

    # Public surface ------------------------------------------------------------------------
    def time_limit(self, seconds: float) -> None:
        """The calls that follow (token refresh included) wait at most `seconds` to connect
        and for each read: never longer than the usual limits."""
        connect, read = self._timeout_arg or MAIL_TIMEOUT
        self.timeout = self._timeout_arg = (min(connect, seconds), min(read, seconds))

    def account_id(self) -> str:
        """The mailbox's Zoho account id: resolved once, then kept on the connection row."""
        if self.connection.account_id:
            return self.connection.account_id
        account = account_from(self._api("/api/accounts"))
        if account is None:
            raise ZohoNotFound("the Zoho user has no mail account", code="no_account")
        self.connection.account_id = account.account_id
        fields = ["account_id"]
        if account.email and not self.connection.email:
            self.connection.email = account.email
            fields.append("email")
        self._save(fields)
        return account.account_id

    def search(
        self,
        *,
        query: str | None = None,
        sender: str | None = None,
        subject: str | None = None,
        limit: int = 10,
    ) -> list[MailSummary]:
        key = build_search_key(query=query, sender=sender, subject=subject)
        if not key:
            return []
        limit = max(1, min(MAX_LIMIT, int(limit)))
        account = self.account_id()
        data = self._api(
            f"/api/accounts/{quote(account, safe='')}/messages/search",
            params={"searchKey": key, "start": 1, "limit": limit},
        )
        return _summaries(data)[:limit]

    def read_html(self, *, message_id: str, folder_id: str) -> str:
        folder, message = _path_id(folder_id, "folderId"), _path_id(message_id, "messageId")
        account = quote(self.account_id(), safe="")
        data = self._api(f"/api/accounts/{account}/folders/{folder}/messages/{message}/content")
        content = data.get("content") if isinstance(data, dict) else None
        return content if isinstance(content, str) else ""

    def list_recent(self, *, since: datetime, limit: int = 200) -> list[MailSummary]:
        """Inbox messages received at or after `since`, newest first (one page, <= 200)."""
        limit = max(1, min(MAX_LIMIT, int(limit)))
        account = self.account_id()
        params: dict[str, Any] = {"start": 1, "limit": limit, "sortorder": "false"}
        inbox = self._inbox_folder_id(account)
        if inbox:
            params["folderId"] = inbox
        data = self._api(f"/api/accounts/{quote(account, safe='')}/messages/view", params=params)
        rows = data if isinstance(data, list) else []
        recent = [
            row for row in rows if isinstance(row, dict) and (received_at(row) or since) >= since
        ]
        return _summaries(recent)[:limit]

    # Internals -----------------------------------------------------------------------------
    def _inbox_folder_id(self, account: str) -> str:
        key = f"correo:zoho:inbox:{self.connection.pk}:{account}"
        cached = cache.get(key)
        if cached:
            return str(cached)
        data = self._api(f"/api/accounts/{quote(account, safe='')}/folders")
        for row in data if isinstance(data, list) else []:
            if not isinstance(row, dict):
                continue
            kind = str(row.get("folderType") or row.get("folderName") or "").lower()
            if kind == "inbox" and row.get("folderId") is not None:
                folder_id = str(row["folderId"])
                cache.set(key, folder_id, FOLDER_CACHE_SECONDS)
                return folder_id
        return ""

    def _api(self, path: str, *, params: dict[str, Any] | None = None) -> Any:
        """GET a Mail API path; returns the envelope's `data`. Refreshes a rejected token once."""
        for attempt in (1, 2):
            token = self._access_token(force=attempt == 2)
            status, body, headers = self._get(path, params, token)
            code, error_code = _envelope_status(status, body)
            if code < 400:
                return body.get("data") if isinstance(body, dict) else None
            if code == 401 or error_code in _AUTH_CODES:
                if error_code == "INVALID_OAUTHSCOPE":
                    raise self._auth_failed("Zoho: missing permission (scope)", error_code)
                if attempt == 1:
                    continue  # the access token expired early or was revoked: refresh once
                raise self._auth_failed("Zoho rejected a fresh access token", error_code)
            raise _api_error(code, error_code, body, headers)
        raise AssertionError("unreachable")  # pragma: no cover

    def _get(self, path: str, params: dict[str, Any] | None, token: str) -> tuple[int, Any, Any]:
        headers = {"Authorization": f"Zoho-oauthtoken {token}", "Accept": "application/json"}
        for attempt in (1, 2):
            try:
                response = self.get(path, params=params, headers=headers, raise_for_status=False)
            except HttpTimeout:
                raise ZohoTimeout("Zoho Mail did not answer in time", code="timeout") from None
            except HttpConnectionError as error:
                if attempt == 1 and error.retryable:
                    time.sleep(RETRY_DELAY_SECONDS)
                    continue
                raise ZohoUnavailable("Zoho Mail unreachable", code="unavailable") from None
            except HttpError as error:
                raise ZohoUnavailable(
                    f"Zoho Mail call failed: {type(error).__name__}", code="unavailable"
                ) from None
            if response.status >= 500 and attempt == 1:
                time.sleep(RETRY_DELAY_SECONDS)
                continue
            try:
                body = response.json()
            except ValueError:
                body = None
            return response.status, body, response.headers
        raise AssertionError("unreachable")  # pragma: no cover

    def _access_token(self, *, force: bool = False) -> str:
        conn = self.connection
        if not conn.refresh_token:
            raise ZohoNotConnected("the mailbox is not connected", code="not_connected")
        fingerprint = hashlib.sha256(conn.refresh_token.encode()).hexdigest()[:16]
        fresh_after = timezone.now() + timedelta(seconds=TOKEN_MARGIN_SECONDS)
        if not force:
            with _tokens_lock:
                cached = _tokens.get(conn.pk)
            if cached and cached.fingerprint == fingerprint and cached.expires_at > fresh_after:
                return cached.token
            expires = conn.access_token_expires_at
            if conn.access_token and expires and expires > fresh_after:
                self._remember(fingerprint, conn.access_token, expires)
                return conn.access_token
        lock = f"correo:zoho:refresh-lock:{conn.pk}"
        if not cache.add(lock, 1, REFRESH_LOCK_SECONDS):
            # Another worker is refreshing this mailbox: use its token rather than spend one
            # more of Zoho's 10 refreshes per 10 minutes.
            adopted = self._await_other_refresh(
                fingerprint, rejected=conn.access_token if force else ""
            )
            if adopted:
                return adopted
        accounts = ZohoAccountsClient(base_url=self.accounts_base_url, timeout=self._timeout_arg)
        try:
            grant = accounts.refresh(refresh_token=conn.refresh_token, throttle_key=str(conn.pk))
        except ZohoAuthError as error:
            raise self._auth_failed(
                "Zoho rejected the refresh token; reconnect the mailbox", error.code
            ) from None
        finally:
            cache.delete(lock)
        expires_at = timezone.now() + timedelta(seconds=grant.expires_in)
        conn.access_token = grant.access_token
        conn.access_token_expires_at = expires_at
        fields = ["access_token", "access_token_expires_at"]
        if conn.last_error:
            conn.last_error, conn.last_error_at = "", None
            fields += ["last_error", "last_error_at"]
        self._save(fields)
        self._remember(fingerprint, grant.access_token, expires_at)
        logger.info("correo.zoho.token_refreshed", extra={"zoho_connection": conn.pk})
        return grant.access_token

    def _await_other_refresh(self, fingerprint: str, *, rejected: str) -> str:
        """Polls the row briefly for a token another worker is fetching ('' if none came)."""
        conn = self.connection
        deadline = time.monotonic() + REFRESH_WAIT_SECONDS
        while time.monotonic() < deadline:
            time.sleep(0.1)
            row = (
                ZohoConnection.objects.for_tenant(conn.tenant_id)
                .filter(pk=conn.pk)
                .only("refresh_token", "access_token", "access_token_expires_at")
                .first()
            )
            fresh_after = timezone.now() + timedelta(seconds=TOKEN_MARGIN_SECONDS)
            if (
                row is not None
                and row.refresh_token == conn.refresh_token
                and row.access_token
                and row.access_token != rejected
                and row.access_token_expires_at
                and row.access_token_expires_at > fresh_after
            ):
                conn.access_token = row.access_token
                conn.access_token_expires_at = row.access_token_expires_at
                self._remember(fingerprint, row.access_token, row.access_token_expires_at)
                return row.access_token
        return ""

    def _save(self, fields: list[str]) -> None:
        """The connection row is its tenant's, whoever uses the client (row-level security)."""
        with tenant_scope(self.connection.tenant_id):
            self.connection.save(update_fields=fields)

    def _remember(self, fingerprint: str, token: str, expires_at: datetime) -> None:
        with _tokens_lock:
            _tokens[self.connection.pk] = _CachedToken(fingerprint, token, expires_at)

    def _auth_failed(self, message: str, code: str) -> ZohoAuthError:
        """Records the failure on the connection (token dropped) and returns the error."""
        conn = self.connection
        with _tokens_lock:
            _tokens.pop(conn.pk, None)
        conn.access_token = ""
        conn.access_token_expires_at = None
        conn.last_error = f"{message} ({code})" if code else message
        conn.last_error_at = timezone.now()
        self._save(["access_token", "access_token_expires_at", "last_error", "last_error_at"])
        logger.warning(
            "correo.zoho.auth_failed", extra={"zoho_connection": conn.pk, "zoho_code": code}
        )
        return ZohoAuthError(message, code=code)


def _summaries(data: Any) -> list[MailSummary]:
    rows = data if isinstance(data, list) else []
    found = (mail_summary(row) for row in rows if isinstance(row, dict))
    return [summary for summary in found if summary is not None]


def _envelope_status(http_status: int, body: Any) -> tuple[int, str]:
    """(effective status, Zoho errorCode) from the HTTP status and either envelope shape."""
    code, error_code = http_status, ""
    if isinstance(body, dict):
        status = body.get("status")
        if isinstance(status, dict):
            status = status.get("code")
        try:
            envelope_code = int(status) if status is not None else 0
        except (TypeError, ValueError):
            envelope_code = 0
        if envelope_code >= 400 and code < 400:
            code = envelope_code  # an error envelope delivered with HTTP 200
        data = body.get("data")
        raw = body.get("errorCode") or (data.get("errorCode") if isinstance(data, dict) else "")
        error_code = str(raw or "")
        if str(body.get("error") or "").lower() == "access denied":
            code = 429
    return code, error_code


def _api_error(code: int, error_code: str, body: Any, headers: Any) -> ZohoError:
    if code == 429:
        retry_after = parse_retry_after(headers.get("retry-after")) if headers else None
        return ZohoRateLimited(
            "Zoho Mail: too many requests",
            code=error_code or "rate_limited",
            retry_after=retry_after,
        )
    if code == 404:
        return ZohoNotFound("Zoho Mail: not found", code=error_code or "not_found")
    if code == 403:
        return ZohoAuthError("Zoho Mail: access denied", code=error_code or "forbidden")
    if code >= 500:
        return ZohoUnavailable(f"Zoho Mail answered {code}", code=error_code or "unavailable")
    return ZohoBadRequest(f"Zoho Mail rejected the request ({code})", code=error_code or "bad")

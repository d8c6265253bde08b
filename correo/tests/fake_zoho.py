"""A fake Zoho (accounts server + Mail API) on loopback, speaking the documented wire format.

Accounts: `POST /oauth/v2/token` (form) for `authorization_code` and `refresh_token` grants.
Errors arrive as Zoho sends them: `{"error": "invalid_code"}` with HTTP 200 for an unknown
refresh token or code, `{"error": "invalid_client_secret"}` for bad client credentials, and past
10 refreshes of one refresh token in 10 minutes the "too many requests" `Access Denied` body.

Mail: `GET /api/accounts`, `/api/accounts/{id}/messages/search?searchKey=…`,
`/api/accounts/{id}/folders`, `/api/accounts/{id}/messages/view`,
`/api/accounts/{id}/folders/{folderId}/messages/{messageId}/content`, with
`Authorization: Zoho-oauthtoken <token>` checked (401 INVALID_OAUTHTOKEN otherwise) and Zoho's
envelopes. Search understands `entire:`, `sender:`, `subject:` terms joined by `::` (quoted
phrases too), enough for tests.

Scripting: `add_message(...)`, `push_token(response)` / `push_mail(response)` (the next token or
Mail API calls answer these instead), `expire_access_tokens()`, `revoke(refresh_token)`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from erp.testing.fake_http import FakeRequest, FakeResponse, FakeServer

PAYLOADS = Path(__file__).parent / "fixtures" / "zoho"
CLIENT_ID = "1000.FAKECLIENTID"
CLIENT_SECRET = "fake-client-secret"
ACCOUNT_ID = "2560636000000008002"
INBOX_ID = "2560636000000008014"
SENT_ID = "2560636000000008020"
REFRESH_TOKEN = "1000.fake-refresh-token.abcdef"
REFRESH_LIMIT = 10
REFRESH_WINDOW = 600.0


def payload(name: str) -> Any:
    return json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8"))


def envelope(data: Any, code: int = 200) -> dict[str, Any]:
    return {"status": {"code": code, "description": "success"}, "data": data}


def mail_error(status: int, error_code: str, description: str = "Invalid Input") -> FakeResponse:
    return FakeResponse.json(
        {"data": {"errorCode": error_code}, "status": {"code": status, "description": description}},
        status=status,
    )


class FakeZoho:
    def __init__(self) -> None:
        self.server = FakeServer()
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self.reset()

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> FakeZoho:
        self.server.start()
        self.server.route("POST", r"/oauth/v2/token", self._token)
        self.server.route("GET", r"/api/accounts", self._accounts)
        base = r"/api/accounts/(?P<account>[^/]+)"
        self.server.route("GET", base + r"/messages/search", self._search)
        self.server.route("GET", base + r"/messages/view", self._view)
        self.server.route("GET", base + r"/folders", self._folders)
        self.server.route(
            "GET",
            base + r"/folders/(?P<folder>[^/]+)/messages/(?P<message>[^/]+)/content",
            self._content,
        )
        return self

    def stop(self) -> None:
        self.server.stop()

    def reset(self) -> None:
        with self._lock:
            self.refresh_tokens: set[str] = {REFRESH_TOKEN}
            self.codes: dict[str, str] = {}  # authorization code -> refresh token it grants
            self.access_tokens: dict[str, float] = {}  # token -> expiry (time.time())
            self.refreshes: dict[str, list[float]] = {}
            self.token_queue: deque[FakeResponse] = deque()
            self.mail_queue: deque[FakeResponse] = deque()
            self.messages: list[dict[str, Any]] = []
            self.contents: dict[str, str] = {}
            self.expires_in = 3600
            self.scope = "ZohoMail.messages.READ ZohoMail.accounts.READ ZohoMail.folders.READ"
        self.server.requests_clear()

    @property
    def url(self) -> str:
        return self.server.url

    # --- scripting --------------------------------------------------------------------
    def add_message(
        self,
        *,
        message_id: str,
        subject: str,
        from_address: str,
        html: str = "<div>Hola</div>",
        sender: str | None = None,
        summary: str | None = None,
        folder_id: str = INBOX_ID,
        received: datetime | None = None,
    ) -> dict[str, Any]:
        when = received or datetime.now(UTC)
        row = {
            "summary": summary if summary is not None else re.sub(r"<[^>]+>", " ", html)[:200],
            "sentDateInGMT": str(int(when.timestamp() * 1000)),
            "calendarType": 0,
            "subject": subject,
            "messageId": message_id,
            "flagid": "flag_not_set",
            "status2": "0",
            "priority": "3",
            "hasInline": "false",
            "toAddress": "&lt;owner@acme.test&gt;",
            "folderId": folder_id,
            "ccAddress": "Not Provided",
            "hasAttachment": "0",
            "size": str(len(html)),
            "labelId": [],
            "sender": sender if sender is not None else from_address,
            "receivedTime": str(int(when.timestamp() * 1000)),
            "fromAddress": from_address,
            "status": "0",
        }
        with self._lock:
            self.messages.append(row)
            self.contents[message_id] = html
        return row

    def add_code(self, code: str, refresh_token: str = REFRESH_TOKEN) -> None:
        with self._lock:
            self.codes[code] = refresh_token
            self.refresh_tokens.add(refresh_token)

    def push_token(self, *responses: FakeResponse) -> None:
        with self._lock:
            self.token_queue.extend(responses)

    def push_mail(self, *responses: FakeResponse) -> None:
        with self._lock:
            self.mail_queue.extend(responses)

    def revoke(self, refresh_token: str = REFRESH_TOKEN) -> None:
        with self._lock:
            self.refresh_tokens.discard(refresh_token)

    def expire_access_tokens(self) -> None:
        """Zoho forgets every access token (a 401 INVALID_OAUTHTOKEN follows)."""
        with self._lock:
            self.access_tokens.clear()

    @staticmethod
    def token_error(name: str, status: int = 200) -> FakeResponse:
        """`invalid_code`, `invalid_client_secret` or `rate_limited` as Zoho sends them."""
        files = {
            "invalid_code": "token_refresh_error_invalid_code",
            "invalid_client_secret": "token_refresh_error_invalid_client_secret",
            "rate_limited": "token_refresh_rate_limited",
        }
        return FakeResponse.json(payload(files[name]), status=status)

    # --- inspection -------------------------------------------------------------------
    def token_requests(self, grant_type: str | None = None) -> list[dict[str, str]]:
        forms = [
            {k: v[0] for k, v in parse_qs(r.body.decode()).items()}
            for r in self.server.requests_to(r"^/oauth/v2/token$")
        ]
        return [f for f in forms if grant_type is None or f.get("grant_type") == grant_type]

    def mail_requests(self, pattern: str = r"^/api/") -> list[FakeRequest]:
        return self.server.requests_to(pattern)

    def search_keys(self) -> list[str]:
        return [r.query["searchKey"][0] for r in self.mail_requests(r"/messages/search$")]

    # --- accounts server --------------------------------------------------------------
    def _token(self, request: FakeRequest) -> FakeResponse:
        with self._lock:
            if self.token_queue:
                return self.token_queue.popleft()
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("client_id") != CLIENT_ID:
            return FakeResponse.json({"error": "invalid_client"})
        if form.get("client_secret") != CLIENT_SECRET:
            return self.token_error("invalid_client_secret")
        grant = form.get("grant_type")
        with self._lock:
            if grant == "authorization_code":
                refresh_token = self.codes.pop(form.get("code", ""), None)
                if refresh_token is None:
                    return self.token_error("invalid_code")
                body = self._issue()
                body["refresh_token"] = refresh_token
                return FakeResponse.json(body)
            if grant == "refresh_token":
                refresh_token = form.get("refresh_token", "")
                if refresh_token not in self.refresh_tokens:
                    return self.token_error("invalid_code")
                now = time.time()
                recent = [
                    t for t in self.refreshes.get(refresh_token, []) if now - t < REFRESH_WINDOW
                ]
                if len(recent) >= REFRESH_LIMIT:
                    return self.token_error("rate_limited", status=400)
                self.refreshes[refresh_token] = [*recent, now]
                return FakeResponse.json(self._issue())
        return FakeResponse.json({"error": "unsupported_grant_type"})

    def _issue(self) -> dict[str, Any]:
        token = f"1000.fake-access-{next(self._counter)}"
        self.access_tokens[token] = time.time() + self.expires_in
        return {
            "access_token": token,
            "scope": self.scope,
            "api_domain": "https://www.zohoapis.com",
            "token_type": "Bearer",
            "expires_in": self.expires_in,
        }

    # --- mail API ---------------------------------------------------------------------
    def _check(self, request: FakeRequest) -> FakeResponse | None:
        with self._lock:
            if self.mail_queue:
                return self.mail_queue.popleft()
            header = request.header("authorization") or ""
            token = header.removeprefix("Zoho-oauthtoken ").strip()
            if (
                not header.startswith("Zoho-oauthtoken ")
                or self.access_tokens.get(token, 0) < time.time()
            ):
                return mail_error(401, "INVALID_OAUTHTOKEN", "Invalid Access")
        if request.params.get("account") not in (None, ACCOUNT_ID):
            return mail_error(400, "INVALID_INPUT")
        return None

    def _accounts(self, request: FakeRequest) -> FakeResponse:
        return self._check(request) or FakeResponse.json(payload("accounts"))

    def _folders(self, request: FakeRequest) -> FakeResponse:
        folders = [
            {"folderId": INBOX_ID, "folderName": "Inbox", "folderType": "Inbox", "path": "/Inbox"},
            {"folderId": SENT_ID, "folderName": "Sent", "folderType": "Sent", "path": "/Sent"},
        ]
        return self._check(request) or FakeResponse.json(envelope(folders))

    def _rows(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = list(self.messages)
        return sorted(rows, key=lambda r: int(r["receivedTime"]), reverse=True)

    def _search(self, request: FakeRequest) -> FakeResponse:
        denied = self._check(request)
        if denied:
            return denied
        key = (request.query.get("searchKey") or [""])[0]
        if not key:
            return mail_error(400, "PATTERN_NOT_MATCHED")
        limit = int((request.query.get("limit") or ["10"])[0])
        terms = []
        for term in key.split("::"):
            field, _, value = term.partition(":")
            terms.append((field, value.strip('"').lower()))
        found = [r for r in self._rows() if all(self._matches(r, f, v) for f, v in terms)]
        return FakeResponse.json(envelope(found[:limit]))

    def _matches(self, row: dict[str, Any], field: str, value: str) -> bool:
        if field == "sender":
            return value in f"{row['sender']} {row['fromAddress']}".lower()
        if field == "subject":
            return value in row["subject"].lower()
        text = f"{row['subject']} {row['summary']} {self.contents.get(row['messageId'], '')}"
        return value in text.lower()

    def _view(self, request: FakeRequest) -> FakeResponse:
        denied = self._check(request)
        if denied:
            return denied
        folder = (request.query.get("folderId") or [None])[0]
        limit = int((request.query.get("limit") or ["10"])[0])
        rows = [r for r in self._rows() if folder is None or r["folderId"] == folder]
        return FakeResponse.json(envelope(rows[:limit]))

    def _content(self, request: FakeRequest) -> FakeResponse:
        denied = self._check(request)
        if denied:
            return denied
        message_id = request.params["message"]
        with self._lock:
            content = self.contents.get(message_id)
            row = next((r for r in self.messages if r["messageId"] == message_id), None)
        if content is None or row is None or row["folderId"] != request.params["folder"]:
            return mail_error(404, "NOT_FOUND", "Not Found")
        return FakeResponse.json(envelope({"messageId": message_id, "content": content}))


@pytest.fixture(scope="session")
def _fake_zoho_server() -> Iterator[FakeZoho]:
    fake = FakeZoho().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def fake_zoho(_fake_zoho_server: FakeZoho, settings: Any) -> Iterator[FakeZoho]:
    """The fake Zoho, reset; settings point the accounts server and Mail API at it."""
    from django.core.cache import cache

    from correo.zoho.client import reset_token_cache

    fake = _fake_zoho_server
    fake.reset()
    settings.ZOHO_ACCOUNTS_BASE_URL = fake.url
    settings.ZOHO_MAIL_BASE_URL = fake.url
    settings.ZOHO_CLIENT_ID = CLIENT_ID
    settings.ZOHO_CLIENT_SECRET = CLIENT_SECRET
    reset_token_cache()
    cache.clear()
    try:
        yield fake
    finally:
        fake.reset()
        reset_token_cache()

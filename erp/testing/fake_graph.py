"""A fake Meta Graph API (WhatsApp Cloud API messages endpoint) on loopback.

`POST /{version}/{phone_number_id}/messages`: a mark-as-read body (`"status": "read"`) gets
`{"success": true}`; a send consumes the scripted queue (`push`) or, when it is empty, answers
like Meta with a fresh wamid. Every request is recorded with its exact JSON body. A send
outside Meta's limits (text over 4096 characters, interactive buttons or lists that break a
documented limit: fake_graph_rules.py) is refused with 131009, as Meta does, and kept in
`rejected` with the reason.

    def test_x(fake_graph):
        fake_graph.push(fake_graph.error(130429), fake_graph.error(500, status=500))
        ...
        assert fake_graph.sent[0]["text"]["body"] == "Hola"

Media (voice notes, images): `media_put(media_id, data, mime_type, token=...)` makes
`GET /{version}/{media_id}` answer the lookup JSON (with a download URL on this server) to that
bearer token only (another token: 404, like Meta for a media id of another business), and
`GET /media-download/{media_id}` the bytes, to the same token.

Templates: `templates_put(waba_id, [template, ...], token=..., number=...)` makes
`GET /{version}/{waba_id}/message_templates` list them to that token (another: Graph's 100
error), `limit` per page (default 25) with `paging.cursors.before/after` and `paging.next`
only while more follow, as Meta pages. `templates_error` answers every list instead. A
template send (`"type": "template"`) from `number` must name an APPROVED template of its
account in that language, else Graph's 132001 error (132018 for a text parameter with a
newline, a tab or more than four spaces in a row, as Meta); `template(...)` builds one entry in
Meta's shape (BODY text with `{{1}}` or named variables).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from erp.testing.fake_graph_rules import send_problem, template_params_problem
from erp.testing.fake_http import FakeRequest, FakeResponse, FakeServer

VERSION = "v24.0"
ROUTE = r"/(?P<version>v[0-9.]+)/(?P<number>[^/]+)/messages"
MEDIA_ROUTE = r"/(?P<version>v[0-9.]+)/(?P<media_id>[0-9]+)$"
DOWNLOAD_ROUTE = r"/media-download/(?P<media_id>[0-9]+)$"
TEMPLATES_ROUTE = r"/(?P<version>v[0-9.]+)/(?P<waba_id>[0-9]+)/message_templates$"
ERROR_MESSAGES = {
    130429: ("(#130429) Rate limit hit", "Cloud API message throughput has been reached."),
    131056: (
        "(#131056) (Business Account, Consumer Account) pair rate limit hit",
        "Message failed to send because there were too many messages sent from this phone "
        "number to the same phone number in a short period of time.",
    ),
    131026: ("(#131026) Message Undeliverable", "Message Undeliverable."),
    131047: (
        "(#131047) Re-engagement message",
        "More than 24 hours have passed since the recipient last replied to the sender number.",
    ),
    190: ("Error validating access token: Session has expired.", ""),
    131009: ("(#131009) Parameter value is not valid", "Parameter value is not valid"),
    132001: (
        "(#132001) Template name does not exist in the translation",
        "template name (x) does not exist in es",
    ),
    132018: ("(#132018) There was an issue with the parameters in your template.", ""),
}


class FakeGraph:
    def __init__(self) -> None:
        self.server = FakeServer()
        self.queue: deque[FakeResponse] = deque()
        self.read_mark_response: FakeResponse | None = None  # e.g. an error; None: success
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.media: dict[str, tuple[bytes, str, str]] = {}  # id -> (data, mime, token)
        self.lookup_bodies: dict[str, dict[str, Any]] = {}  # id -> a recorded lookup answer
        self.rejected: list[tuple[str, Any]] = []  # (problem, body) refused with 131009
        self.templates: dict[str, tuple[list[dict[str, Any]], str]] = {}  # waba -> (list, token)
        self.number_waba: dict[str, str] = {}  # phone_number_id -> waba_id
        self.templates_error: FakeResponse | None = None

    def start(self) -> FakeGraph:
        self.server.start()
        self.server.route("POST", ROUTE, self._handle)
        self.server.route("GET", MEDIA_ROUTE, self._media_lookup)
        self.server.route("GET", DOWNLOAD_ROUTE, self._media_download)
        self.server.route("GET", TEMPLATES_ROUTE, self._templates_list)
        return self

    def stop(self) -> None:
        self.server.stop()

    def reset(self) -> None:
        with self._lock:
            self.queue.clear()
            self.read_mark_response = None
            self.media.clear()
            self.lookup_bodies.clear()
            self.rejected.clear()
            self.templates.clear()
            self.number_waba.clear()
            self.templates_error = None
        self.server.requests_clear()

    @property
    def url(self) -> str:
        """The base URL with the version, as WHATSAPP_GRAPH_BASE_URL expects."""
        return f"{self.server.url}/{VERSION}"

    # --- scripting ---------------------------------------------------------------------
    def push(self, *responses: FakeResponse) -> None:
        with self._lock:
            self.queue.extend(responses)

    def media_put(
        self,
        media_id: str,
        data: bytes,
        mime_type: str,
        *,
        token: str,
        lookup: dict[str, Any] | None = None,
    ) -> None:
        """A media object the business owning `token` may fetch; `lookup`: answer the lookup
        with this body instead (a recorded one; its `url` is pointed at this server)."""
        with self._lock:
            self.media[media_id] = (data, mime_type, token)
            if lookup is not None:
                url = f"{self.server.url}/media-download/{media_id}"
                self.lookup_bodies[media_id] = {**lookup, "url": url}

    def templates_put(
        self, waba_id: str, templates: list[dict[str, Any]], *, token: str, number: str = ""
    ) -> None:
        """The account's templates (replacing what it had), listed to `token`; sends from
        `number` are checked against them."""
        with self._lock:
            self.templates[waba_id] = ([dict(t) for t in templates], token)
            if number:
                self.number_waba[number] = waba_id

    @staticmethod
    def template(
        name: str,
        body: str,
        *,
        language: str = "es",
        category: str = "UTILITY",
        status: str = "APPROVED",
        named: bool = False,
    ) -> dict[str, Any]:
        """One entry of the list in Meta's shape."""
        entry: dict[str, Any] = {
            "name": name,
            "language": language,
            "status": status,
            "category": category,
            "id": str(int(hashlib.sha256(f"{name}:{language}".encode()).hexdigest()[:12], 16)),
            "components": [{"type": "BODY", "text": body}],
        }
        if named:
            entry["parameter_format"] = "NAMED"
        return entry

    @staticmethod
    def error(code: int, *, status: int = 400, details: str = "") -> FakeResponse:
        """A Graph error envelope (the shape of payloads/whatsapp_error_*_response.json)."""
        if status >= 500 and code >= 500:
            body = {"error": {"message": "An unexpected error has occurred.", "code": code}}
            return FakeResponse.json(body, status=status)
        message, known = ERROR_MESSAGES.get(code, (f"(#{code}) error", ""))
        details = details or known
        error: dict[str, Any] = {"message": message, "type": "OAuthException", "code": code}
        if details:
            error["error_data"] = {"messaging_product": "whatsapp", "details": details}
        error["fbtrace_id"] = "AfakeTrace0000000000000"
        return FakeResponse.json({"error": error}, status=status)

    # --- what arrived --------------------------------------------------------------------
    @property
    def requests(self) -> list[FakeRequest]:
        return self.server.requests_snapshot()

    @property
    def sent(self) -> list[dict[str, Any]]:
        """Bodies of send requests (not mark-as-read), in arrival order."""
        return [r.json() for r in self.posts if "status" not in r.json()]

    @property
    def template_lists(self) -> list[FakeRequest]:
        """Template list requests, in arrival order."""
        return [r for r in self.requests if r.path.endswith("/message_templates")]

    @property
    def read_marks(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.posts if r.json().get("status") == "read"]

    @property
    def posts(self) -> list[FakeRequest]:
        return [r for r in self.requests if r.method == "POST"]

    @property
    def media_requests(self) -> list[FakeRequest]:
        """Media lookups and downloads, in arrival order."""
        gets = [r for r in self.requests if r.method == "GET"]
        return [r for r in gets if not r.path.endswith("/message_templates")]

    # --- handler -------------------------------------------------------------------------
    def _handle(self, request: FakeRequest) -> FakeResponse:
        body = request.json()
        if isinstance(body, dict) and body.get("status") == "read":
            return self.read_mark_response or FakeResponse.json({"success": True})
        with self._lock:
            scripted = self.queue.popleft() if self.queue else None
            n = next(self._ids)
        if scripted is not None:
            return scripted
        refused = self._template_refused(request.params.get("number", ""), body)
        if refused is not None:
            return refused
        params = template_params_problem(body)
        if params is not None:
            return self.error(132018, details=params)
        problem = send_problem(body)
        if problem is not None:
            with self._lock:
                self.rejected.append((problem, body))
            return self.error(131009, details=problem)
        to = str(body.get("to", "")) if isinstance(body, dict) else ""
        return FakeResponse.json(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
                "messages": [{"id": f"wamid.FAKE{n:08d}"}],
            }
        )

    def _template_refused(self, number: str, body: Any) -> FakeResponse | None:
        """Graph's 132001 for a template its account does not have approved in that language."""
        if not isinstance(body, dict) or body.get("type") != "template":
            return None
        with self._lock:
            waba = self.number_waba.get(number)
            listed = self.templates.get(waba or "", ([], ""))[0]
        if waba is None:
            return None
        template = body.get("template") or {}
        language = (template.get("language") or {}).get("code")
        wanted = (template.get("name"), language, "APPROVED")
        if any((e["name"], e["language"], e.get("status")) == wanted for e in listed):
            return None
        return self.error(132001)

    def _templates_list(self, request: FakeRequest) -> FakeResponse:
        if self.templates_error is not None:
            return self.templates_error
        waba = request.params["waba_id"]
        with self._lock:
            listed, token = self.templates.get(waba, ([], None))
        if token is None or request.header("authorization") != f"Bearer {token}":
            body = {"error": {"message": "Unsupported get request.", "code": 100}}
            return FakeResponse.json(body, status=400)
        limit = int((request.query.get("limit") or ["25"])[0])
        after = (request.query.get("after") or [""])[0]
        start = int(base64.b64decode(after).decode()) if after else 0
        page = listed[start : start + limit]
        paging: dict[str, Any] = {
            "cursors": {
                "before": base64.b64encode(str(start).encode()).decode(),
                "after": base64.b64encode(str(start + len(page)).encode()).decode(),
            }
        }
        if start + limit < len(listed):
            cursor = paging["cursors"]["after"]
            paging["next"] = f"{self.url}/{waba}/message_templates?limit={limit}&after={cursor}"
        return FakeResponse.json({"data": page, "paging": paging})

    def _owned_media(self, request: FakeRequest) -> tuple[bytes, str] | None:
        media_id = request.params["media_id"]
        with self._lock:
            found = self.media.get(media_id)
        token = request.header("authorization") or ""
        if found is None or token != f"Bearer {found[2]}":
            return None
        return found[0], found[1]

    def _media_lookup(self, request: FakeRequest) -> FakeResponse:
        owned = self._owned_media(request)
        if owned is None:
            body = {"error": {"message": "Unsupported get request.", "code": 100}}
            return FakeResponse.json(body, status=404)
        media_id = request.params["media_id"]
        if media_id in self.lookup_bodies:
            return FakeResponse.json(self.lookup_bodies[media_id])
        return FakeResponse.json(
            {
                "messaging_product": "whatsapp",
                "url": f"{self.server.url}/media-download/{media_id}",
                "mime_type": owned[1],
                "sha256": hashlib.sha256(owned[0]).hexdigest(),
                "file_size": len(owned[0]),
                "id": media_id,
            }
        )

    def _media_download(self, request: FakeRequest) -> FakeResponse:
        owned = self._owned_media(request)
        if owned is None:
            return FakeResponse(status=404, body=b"not found")
        return FakeResponse(body=owned[0], headers={"Content-Type": owned[1]})


@pytest.fixture(scope="session")
def _fake_graph_server() -> Iterator[FakeGraph]:
    fake = FakeGraph().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def fake_graph(_fake_graph_server: FakeGraph, settings: Any) -> FakeGraph:
    """The fake Graph API, reset; settings point the WhatsApp channel at it (no retry waits)."""
    fake = _fake_graph_server
    fake.reset()
    settings.WHATSAPP_GRAPH_BASE_URL = fake.url
    settings.WHATSAPP_RETRY_BASE_MS = 0
    return fake

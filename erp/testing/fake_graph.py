"""A fake Meta Graph API (WhatsApp Cloud API messages endpoint) on loopback.

`POST /{version}/{phone_number_id}/messages`: a mark-as-read body (`"status": "read"`) gets
`{"success": true}`; a send consumes the scripted queue (`push`) or, when it is empty, answers
like Meta with a fresh wamid. Every request is recorded with its exact JSON body.

    def test_x(fake_graph):
        fake_graph.push(fake_graph.error(130429), fake_graph.error(500, status=500))
        ...
        assert fake_graph.sent[0]["text"]["body"] == "Hola"
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from erp.testing.fake_http import FakeRequest, FakeResponse, FakeServer

VERSION = "v24.0"
ROUTE = r"/(?P<version>v[0-9.]+)/(?P<number>[^/]+)/messages"
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
}


class FakeGraph:
    def __init__(self) -> None:
        self.server = FakeServer()
        self.queue: deque[FakeResponse] = deque()
        self.read_mark_response: FakeResponse | None = None  # e.g. an error; None: success
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self) -> FakeGraph:
        self.server.start()
        self.server.route("POST", ROUTE, self._handle)
        return self

    def stop(self) -> None:
        self.server.stop()

    def reset(self) -> None:
        with self._lock:
            self.queue.clear()
            self.read_mark_response = None
        self.server.requests_clear()

    @property
    def url(self) -> str:
        """The base URL with the version, as WHATSAPP_GRAPH_BASE_URL expects."""
        return f"{self.server.url}/{VERSION}"

    # --- scripting ---------------------------------------------------------------------
    def push(self, *responses: FakeResponse) -> None:
        with self._lock:
            self.queue.extend(responses)

    @staticmethod
    def error(code: int, *, status: int = 400) -> FakeResponse:
        """A Graph error envelope (the shape of payloads/whatsapp_error_*_response.json)."""
        if status >= 500 and code >= 500:
            body = {"error": {"message": "An unexpected error has occurred.", "code": code}}
            return FakeResponse.json(body, status=status)
        message, details = ERROR_MESSAGES.get(code, (f"(#{code}) error", ""))
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
        return [r.json() for r in self.requests if "status" not in r.json()]

    @property
    def read_marks(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.requests if r.json().get("status") == "read"]

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
        to = str(body.get("to", "")) if isinstance(body, dict) else ""
        return FakeResponse.json(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
                "messages": [{"id": f"wamid.FAKE{n:08d}"}],
            }
        )


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

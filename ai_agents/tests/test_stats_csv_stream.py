"""The conversations CSV under ASGI (our server): sent while the rows are still being read,
in several chunks of the database cursor, never collected in memory first; the same file as
under the test client, and only the caller's tenant's conversations."""

from __future__ import annotations

import asyncio
import csv
import io
import warnings
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import pytest

from ai_agents.api import stats as stats_api
from ai_agents.selectors import stats as stats_selectors
from ai_agents.tests.stats_helpers import PERIOD, stats_week
from erp import streaming
from erp.testing.fixtures import Persona, api_client_for

URL = "/api/v1/stats/conversations.csv"


def _asgi_get(path: str, query: str, key: str, on_body: Any) -> tuple[int, bytes]:
    """GET through Django's ASGI application as uvicorn calls it; `on_body()` is called as
    each piece of the body is sent."""
    from django.core.asgi import get_asgi_application

    application = get_asgi_application()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {key}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[Mapping[str, Any]] = []
    requested: list[bool] = []

    async def receive() -> dict[str, Any]:
        if not requested:  # the request, then a client that stays until the end
            requested.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            on_body()
        sent.append(message)

    asyncio.run(application(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


def _rows(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode("utf-8").lstrip("\ufeff"))))


@pytest.mark.django_db(transaction=True)  # the ASGI handler reads from its own thread
def test_the_conversations_csv_streams_under_asgi(
    owner: Persona, outsider: Persona, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    week = stats_week(owner.tenant, owner.user)
    stats_week(outsider.tenant, outsider.user)
    monkeypatch.setattr(stats_selectors, "CSV_CHUNK_ROWS", 2)  # 7 conversations: 4 fetches
    monkeypatch.setattr(streaming, "PARTS_PER_PULL", 2)
    read: list[int] = []  # conversations read from the database so far
    real_rows = stats_api.conversation_rows

    def counted_rows(**kwargs: Any) -> Iterator[list[Any]]:
        for row in real_rows(**kwargs):
            read.append(1)
            yield row

    monkeypatch.setattr(stats_api, "conversation_rows", counted_rows)
    read_when_sent: list[int] = []
    client = api_client_for(owner.tenant)
    key = client.api_key.key  # type: ignore[attr-defined]  # set by the fixture on the client

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status, body = _asgi_get(
            URL, urlencode(PERIOD), key, lambda: read_when_sent.append(len(read))
        )

    assert status == 200
    rows = _rows(body)
    assert len(rows) == 1 + 7  # the header and the week's 7 conversations
    assert {row[0] for row in rows[1:]} == {
        str(week[name].pk) for name in ("c1", "c2", "c3", "c4", "c5", "c6", "c8")
    }
    # Sent as read: the first lines left before the last conversation was read.
    assert read_when_sent[0] < 8 and read_when_sent[-1] == 8
    assert len(read_when_sent) >= 4
    assert not [w for w in caught if "must consume" in str(w.message)]
    # The same file as the test client (WSGI path) gets.
    export: Any = client.get(URL, PERIOD)
    same = b"".join(export.streaming_content)
    assert same == body

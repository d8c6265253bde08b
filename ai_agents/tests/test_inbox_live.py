"""Live inbox events: `inbox_event_publish` (after commit, never raises) and `GET /inbox/live`
(server-sent events under uvicorn, real Redis): a member receives their tenants' events only (a
user in two tenants both), a reconnect with Last-Event-ID gets what it missed, idle streams
send heartbeats, end after their lifetime and hold no database connection."""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any

import pytest
import redis
import requests
from django.conf import settings
from django.db import connection, transaction
from django.test import Client

from ai_agents.services import inbox_events
from ai_agents.services.inbox_events import inbox_event_publish, stream_key
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import Persona


class Stream:
    """One `/inbox/live` connection read in a thread: frames as dicts, comments as "ping"."""

    def __init__(self, base: str, session: str, last_event_id: str = "") -> None:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self.response = requests.get(
            f"{base}/inbox/live",
            cookies={"sessionid": session},
            headers=headers,
            stream=True,
            timeout=10,
            allow_redirects=False,
        )
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        frame: dict[str, Any] = {}
        try:
            for line in self.response.iter_lines(decode_unicode=True):
                if line.startswith(":"):
                    self.frames.put({"event": "ping"})
                elif line == "" and frame:
                    self.frames.put(frame)
                    frame = {}
                elif ": " in line:
                    key, value = line.split(": ", 1)
                    frame[key] = json.loads(value) if key == "data" else value
        except (requests.RequestException, AttributeError, OSError, ValueError):
            pass  # the test closed the response under the reading thread
        self.frames.put({"event": "end"})

    def next(self, event: str, timeout: float = 8.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                frame = self.frames.get(timeout=left)
            except queue.Empty:
                break
            if frame.get("event") == event:
                return frame
            if frame.get("event") == "inbox" and event != "inbox":
                raise AssertionError(f"unexpected event {frame}")
        raise AssertionError(f"no {event!r} within {timeout} s")

    def nothing_more(self, wait: float = 1.0) -> None:
        time.sleep(wait)
        while not self.frames.empty():
            frame = self.frames.get_nowait()
            assert frame.get("event") in ("ping",), f"unexpected {frame}"

    def close(self) -> None:
        self.response.close()


def _client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _session(user: Any) -> str:
    return _client_for(user).cookies["sessionid"].value


def _both(tenant_a: Any, tenant_b: Any) -> Any:
    user = UserFactory(username="both@example.test")
    for tenant in (tenant_a, tenant_b):
        MembershipFactory.create(tenant=tenant, user=user, role=Membership.Role.AGENT)
    return user


@pytest.mark.django_db
def test_an_event_leaves_after_the_commit_only_and_a_failure_never_reaches_the_caller(
    owner: Persona, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = stream_key(owner.tenant.pk)
    client.delete(key)
    with django_capture_on_commit_callbacks(execute=True):
        inbox_event_publish(tenant_id=owner.tenant.pk, conversation_id="c-1", kind="status")
        assert client.xlen(key) == 0  # not before the commit
    entries: Any = client.xrange(key)
    [(_, fields)] = entries
    assert fields == {b"conversation_id": b"c-1", b"kind": b"status"}

    with pytest.raises(RuntimeError), transaction.atomic():
        inbox_event_publish(tenant_id=owner.tenant.pk, conversation_id="c-2", kind="message")
        raise RuntimeError("rolled back")
    inbox_event_publish(tenant_id=owner.tenant.pk, conversation_id="c-3", kind="nonsense")
    assert client.xlen(key) == 1  # neither the rolled back one nor an unknown kind

    settings.REDIS_URL = "unix:///nonexistent/redis.sock"
    inbox_events._client = None
    try:
        with django_capture_on_commit_callbacks(execute=True):
            inbox_event_publish(tenant_id=owner.tenant.pk, conversation_id="c-4", kind="note")
    finally:
        inbox_events._client = None
    assert client.xlen(key) == 1


def test_a_held_round_trip_reports_only_what_failed(caplog: Any) -> None:
    """One Redis round trip carries a request's events and commands; a command Redis refuses,
    or an event whose extra commands cannot be built, is reported on its own: the rest went."""
    client = inbox_events._redis()
    key = stream_key(987_654)
    client.delete(key, "test:held-list", "test:held-string")
    client.set("test:held-string", "not a list")
    failed: list[str] = []

    def along_broken() -> list[Any]:
        raise RuntimeError("no commands")

    with inbox_events.held():
        inbox_events._send(987_654, "c-ok", "message")
        inbox_events.commands_send(
            [("LPUSH", "test:held-string", "x")], failed=lambda: failed.append("refused")
        )
        inbox_events.commands_send(
            [("LPUSH", "test:held-list", "x")], failed=lambda: failed.append("queued")
        )
        inbox_events._send(987_654, "c-broken", "message", along_broken)
        assert client.xlen(key) == 0  # nothing left before the block ends

    assert failed == ["refused"]
    assert client.lrange("test:held-list", 0, -1) == [b"x"]
    sent = [fields[b"conversation_id"] for _, fields in client.xrange(key)]
    assert sent == [b"c-ok"]
    logged = [r.conversation_id for r in caplog.records if r.msg == "inbox_event.publish_failed"]
    assert logged == ["c-broken"]


@pytest.mark.slow
def test_a_member_receives_the_events_of_their_tenants_only(
    asgi_server: str, owner: Persona, outsider: Persona
) -> None:
    both = _both(owner.tenant, outsider.tenant)
    ours = conversation_make(agent_for(owner.tenant), thread="ours")
    theirs = conversation_make(agent_for(outsider.tenant), thread="theirs")
    streams = {
        "owner": Stream(asgi_server, _session(owner.user)),
        "outsider": Stream(asgi_server, _session(outsider.user)),
        "both": Stream(asgi_server, _session(both)),
    }
    try:
        ready = {name: s.next("ready")["data"]["tenants"] for name, s in streams.items()}
        assert ready == {
            "owner": [owner.tenant.pk],
            "outsider": [outsider.tenant.pk],
            "both": sorted([owner.tenant.pk, outsider.tenant.pk]),
        }
        inbox_event_publish(tenant_id=owner.tenant.pk, conversation_id=ours.pk, kind="message")
        inbox_event_publish(tenant_id=outsider.tenant.pk, conversation_id=theirs.pk, kind="note")

        got = streams["owner"].next("inbox")
        assert got["data"] == {
            "conversation_id": str(ours.pk),
            "kind": "message",
            "tenant_id": owner.tenant.pk,
        }
        assert streams["outsider"].next("inbox")["data"]["conversation_id"] == str(theirs.pk)
        first, second = streams["both"].next("inbox"), streams["both"].next("inbox")
        assert {first["data"]["conversation_id"], second["data"]["conversation_id"]} == {
            str(ours.pk),
            str(theirs.pk),
        }
        streams["owner"].nothing_more()
        streams["outsider"].nothing_more(0.1)
    finally:
        for stream in streams.values():
            stream.close()

    # Reconnecting with the id of the first event brings the second one again; a cursor naming
    # another tenant's stream is ignored (the outsider learns nothing about the owner's tenant).
    again = Stream(asgi_server, _session(both), last_event_id=first["id"])
    forged = Stream(asgi_server, _session(outsider.user), last_event_id=f"{owner.tenant.pk}=0-0")
    try:
        again.next("ready")
        assert again.next("inbox")["data"] == second["data"]
        forged.next("ready")
        forged.nothing_more()
    finally:
        again.close()
        forged.close()


@pytest.mark.slow
def test_idle_streams_beat_end_after_their_lifetime_and_hold_no_database_connection(
    asgi_server: str, owner: Persona, settings: Any
) -> None:
    settings.INBOX_LIVE_HEARTBEAT_S = 0.3
    settings.INBOX_LIVE_LIFETIME_S = 2.5
    session = _session(owner.user)

    def backends() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            )
            return int(cursor.fetchone()[0])

    before = backends()
    streams = [Stream(asgi_server, session) for _ in range(4)]
    try:
        for stream in streams:
            stream.next("ready")
        time.sleep(0.5)
        assert backends() - before <= 1  # 4 open, idle streams: no connection each
        started = time.monotonic()
        streams[0].next("ping", timeout=2)
        streams[0].next("end", timeout=5)  # the server ended it: the browser reconnects
        assert time.monotonic() - started < 5
    finally:
        for stream in streams:
            stream.close()


@pytest.mark.django_db
def test_the_stream_needs_a_staff_login(client: Any, owner: Persona) -> None:
    response = client.get("/inbox/live")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert settings.REDIS_URL  # the project's Redis carries the events


@pytest.mark.slow
def test_a_stream_without_redis_ends_quietly_and_the_page_falls_back(
    asgi_server: str, owner: Persona, settings: Any
) -> None:
    session = _session(owner.user)
    settings.REDIS_URL = "unix:///nonexistent/redis.sock"
    stream = Stream(asgi_server, session)
    try:
        assert stream.response.status_code == 200
        # The stream ends without "ready": EventSource retries, then the page polls.
        assert stream.frames.get(timeout=8) == {"event": "end"}
    finally:
        stream.close()


@pytest.mark.django_db
def test_under_wsgi_the_stream_answers_204_and_the_pages_poll(owner: Persona) -> None:
    response = _client_for(owner.user).get("/inbox/live")
    assert response.status_code == 204

"""A process-local copy of a shared-cache value lives only while its process hears the
forgets of every other process (Redis publish/subscribe), on the real test Redis."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.conf import settings

from erp import local_mirror
from erp.local_mirror import MISSING, LocalMirror


def _until(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def _listening(mirror: LocalMirror) -> LocalMirror:
    """`mirror` once Redis confirmed its subscription (a copy put then is kept)."""
    assert mirror.settled(), "the mirror never started listening"
    return mirror


@pytest.fixture
def mirror() -> Any:
    mirror = _listening(LocalMirror(f"test-mirror:{uuid.uuid4().hex}", ttl_s=60))
    yield mirror
    mirror.close()


def _other_process_forgets(mirror: LocalMirror, keys: list[str]) -> None:
    """What `forget` in another process sends: a PUBLISH on the mirror's channel."""
    redis.Redis.from_url(settings.REDIS_URL).publish(mirror.channel, json.dumps(keys))


def test_a_forget_published_elsewhere_drops_the_copy_here(mirror: LocalMirror) -> None:
    mirror.put("a", "old A", mirror.generation())
    mirror.put("b", "B", mirror.generation())

    _other_process_forgets(mirror, ["a"])

    assert _until(lambda: mirror.get("a") is MISSING)
    assert mirror.get("b") == "B"


def test_a_value_read_while_a_forget_arrived_is_not_kept(mirror: LocalMirror) -> None:
    since = mirror.generation()  # taken before the shared read...
    _other_process_forgets(mirror, ["a"])  # ...which a forget then overtakes
    assert _until(lambda: mirror.generation() != since)

    mirror.put("a", "read before the forget", since)

    assert mirror.get("a") is MISSING
    mirror.put("a", "read after it", mirror.generation())
    assert mirror.get("a") == "read after it"


def test_settled_waits_until_listening_and_every_forget_published_before_is_heard() -> None:
    """What tests lean on before they count a cached read: nothing in flight drops it later."""
    mirror = LocalMirror(f"test-mirror:{uuid.uuid4().hex}", ttl_s=60)
    try:
        assert mirror.settled()
        mirror.put("a", "A", mirror.generation())  # kept at once: it listens
        assert mirror.get("a") == "A"
        _other_process_forgets(mirror, ["a"])

        assert mirror.settled()

        assert mirror.get("a") is MISSING  # heard, no wait
    finally:
        mirror.close()


def test_a_forget_marks_its_own_keys_as_forgotten_not_the_others(mirror: LocalMirror) -> None:
    """A value read while another key was forgotten may still go to the shared copy (a
    binding change of one number does not stop the others' reads from being cached)."""
    since = mirror.generation()
    _other_process_forgets(mirror, ["a"])
    assert _until(lambda: mirror.generation() != since)

    assert mirror.forgotten_since(since, "a") and mirror.forgotten_since(since)
    assert not mirror.forgotten_since(since, "b")
    mirror.clear()  # everything forgotten: every key
    assert mirror.forgotten_since(since, "b")


def test_forget_here_drops_at_once_and_reaches_the_other_processes(mirror: LocalMirror) -> None:
    other = _listening(LocalMirror(mirror.channel, ttl_s=60))
    other.put("a", "A elsewhere", other.generation())
    mirror.put("a", "A here", mirror.generation())

    mirror.forget(["a"])

    assert mirror.get("a") is MISSING  # no wait in the process that forgets
    assert _until(lambda: other.get("a") is MISSING)
    other.close()


def test_a_lost_connection_drops_every_copy_until_it_listens_again(
    mirror: LocalMirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forgets published while the connection was down are lost: nothing from before counts."""
    monkeypatch.setattr(local_mirror, "RETRY_S", 0.05)
    mirror.put("a", "A", mirror.generation())

    redis.Redis.from_url(settings.REDIS_URL).client_kill_filter(_type="pubsub")

    assert _until(lambda: mirror.get("a") is MISSING)
    _listening(mirror)  # back, empty
    assert mirror.get("a") is MISSING


def test_a_copy_expires_after_its_ttl() -> None:
    mirror = _listening(LocalMirror(f"test-mirror:{uuid.uuid4().hex}", ttl_s=0.2))
    mirror.put("a", "A", mirror.generation())
    assert mirror.get("a") == "A"

    assert _until(lambda: mirror.get("a") is MISSING, seconds=2)
    mirror.close()


def test_without_redis_nothing_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that cannot hear the forgets must not trust a copy: it keeps none."""
    monkeypatch.setattr(settings, "REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setattr(local_mirror, "RETRY_S", 0.05)
    mirror = LocalMirror(f"test-mirror:{uuid.uuid4().hex}", ttl_s=60)

    for _ in range(20):
        mirror.put("a", "A", mirror.generation())
        time.sleep(0.01)

    assert mirror.get("a") is MISSING
    mirror.forget(["a"])  # a failed publish is logged, never raised
    mirror.close()


def test_forgets_before_any_read_share_one_publishing_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that only writes (an admin save) publishes its forgets on one client, not a
    new connection per forget."""
    made: list[Any] = []
    real = local_mirror._client

    def counted() -> Any:
        made.append(1)
        return real()

    monkeypatch.setattr(local_mirror, "_client", counted)
    writer = LocalMirror(f"test-mirror:{uuid.uuid4().hex}", ttl_s=60)
    try:
        for n in range(5):
            writer.forget([f"k{n}"])
        assert len(made) == 1
    finally:
        writer.close()


def _exits_within(pid: int, seconds: float) -> bool:
    """Whether the child `pid` exited with status 0 in time (else it is killed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return False


def test_a_process_forked_while_the_mirror_was_busy_can_use_it(mirror: LocalMirror) -> None:
    """A fork copies the lock as it is: held (by the listener, or a request's thread, at that
    instant) it would stay held in the child, whose first read would wait forever."""
    with mirror._lock:  # what another thread holds at the moment of the fork
        pid = os.fork()
        if pid == 0:  # the child: a new process, its mirror starts anew
            code = 1
            try:
                mirror.put("a", "A", mirror.generation())
                mirror.get("a")
                code = 0
            finally:
                os._exit(code)

    assert _exits_within(pid, seconds=5), "the forked process hung on the mirror's lock"

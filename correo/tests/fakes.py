"""In-memory stand-ins for correo tests (imported by the test modules; no conftest.py so
that it merges with the Zoho branch's)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from django.core.cache import cache

from correo import mailbox as mailbox_module
from correo.mailbox import MailItem


@pytest.fixture(autouse=True)
def clean_cache() -> Iterator[None]:
    cache.clear()  # rate-limit slots and cached JWKS are per test
    yield
    cache.clear()


@dataclass
class FakeMailbox:
    """The `correo.mailbox.Mailbox` interface, scripted in memory."""

    items: list[MailItem] = field(default_factory=list)
    bodies: dict[tuple[str, str], str] = field(default_factory=dict)
    error: Exception | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay_s: float = 0.0  # each call takes this long (cut to the time limit: then it fails)
    time_limits: list[float] = field(default_factory=list)

    def time_limit(self, seconds: float) -> None:
        self.time_limits.append(seconds)

    def _wait(self) -> None:
        if not self.delay_s:
            return
        limit = self.time_limits[-1] if self.time_limits else self.delay_s
        time.sleep(min(self.delay_s, limit))
        if self.delay_s > limit:
            raise mailbox_module.MailboxUnavailable("timeout")

    def search(
        self, *, query: str | None, sender: str | None, subject: str | None, limit: int = 10
    ) -> list[MailItem]:
        self.calls.append(("search", {"query": query, "sender": sender, "subject": subject}))
        self._wait()
        if self.error:
            raise self.error
        return self.items[:limit]

    def read_text(self, *, message_id: str, folder_id: str) -> str:
        self.calls.append(("read", {"message_id": message_id, "folder_id": folder_id}))
        self._wait()
        if self.error:
            raise self.error
        try:
            return self.bodies[(message_id, folder_id)]
        except KeyError:
            raise mailbox_module.MailboxNotFound(message_id) from None

    def list_recent(self, *, since: datetime, limit: int = 200) -> list[MailItem]:
        self.calls.append(("list_recent", {"since": since}))
        if self.error:
            raise self.error
        return self.items[:limit]


@pytest.fixture
def fake_mailbox(monkeypatch: pytest.MonkeyPatch) -> FakeMailbox:
    box = FakeMailbox()
    monkeypatch.setattr(mailbox_module, "mailbox_for", lambda user, tenant: box)
    return box


def hetzner_items() -> list[MailItem]:
    return [
        MailItem(
            message_id=f"msg_12{i}",
            folder_id="inbox",
            de="alerts@hetzner.de",
            asunto=f"Aviso de mantenimiento {i}",
            fecha=f"2026-11-2{i}T08:00:00+00:00",
            resumen="Your server was rebooted " * 20,
        )
        for i in (3, 2, 1)
    ]

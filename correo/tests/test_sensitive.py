# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""Mail bodies never reach the database or the logs (README: "The mailbox secretary")."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.db import connection

from correo import secretary
from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox, hetzner_items  # noqa: F401
from erp.llm.gateway import RetryPolicy
from erp.tenancy.scoping import all_tenants
from erp.testing.fake_google import FakeGoogle

MARKER = "MARCADOR-CUERPO-5e1f0c9a"
TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb")


def rows_containing(marker: str) -> list[str]:
    """Every text-like column of every table in the public schema that holds `marker` (every
    tenant's rows: the explicit bypass of row-level security)."""
    with all_tenants(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type = ANY(%s)",
            [list(TEXT_TYPES)],
        )
        columns = cursor.fetchall()
        assert len(columns) > 20  # the scan really covers the schema
        found = []
        for table, column in columns:
            cursor.execute(
                f'SELECT count(*) FROM "{table}" WHERE "{column}"::text LIKE %s',
                [f"%{marker}%"],
            )
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


def test_a_read_body_is_stored_and_logged_nowhere(
    owner_client: Any,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
):
    caplog.set_level(logging.DEBUG)
    for name in ("erp", "correo", "django", "google_genai", "httpx", "urllib3"):
        caplog.set_level(logging.DEBUG, logger=name)
    monkeypatch.setattr(secretary, "RETRY", RetryPolicy(timeout_s=2, attempts=2, base_delay_s=0))
    fake_mailbox.items = hetzner_items()
    fake_mailbox.bodies[("msg_123", "inbox")] = f"Your server was rebooted. {MARKER}"
    fake_google.push(
        fake_google.reply_json({"action": "buscar", "from": "alerts@hetzner.de"}),
        fake_google.reply_json({"action": "leer", "messageId": "msg_123", "folderId": "inbox"}),
        fake_google.unavailable(),  # a failed attempt too: its error goes to the ledger
        fake_google.reply_json({"action": "responder", "answer": "Se reinició."}),
    )

    response = owner_client.post(
        "/api/correo/ask",
        data=json.dumps({"question": "¿Qué decía Hetzner?"}),
        content_type="application/json",
    )

    assert response.status_code == 200
    assert response.json()["tool_rounds"] == 2
    # the body did reach the model (so the scan below is meaningful)
    assert MARKER in json.dumps(fake_google.generate_requests[2], ensure_ascii=False)
    assert rows_containing(MARKER) == []
    assert rows_containing("Se reinició") == []  # nor the answer
    assert rows_containing("¿Qué decía Hetzner?") == ["correo_chatquery.question"]
    assert caplog.records, "logging was captured"
    logged = "\n".join(
        f"{r.getMessage()} {json.dumps(r.__dict__, default=str, ensure_ascii=False)}"
        for r in caplog.records
    )
    assert MARKER not in logged
    assert "Your server was rebooted" not in logged

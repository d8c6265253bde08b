# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""POST /api/correo/ask when things go wrong: the per-user rate limit, telemetry that fails,
the model timing out or unavailable, the mailbox not connected or failing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from correo import secretary
from correo.mailbox import MailboxNotConnected, MailboxUnavailable
from correo.models import ChatQuery
from correo.tests.ask_kit import (
    fast_retries,  # noqa: F401 (autouse fixture)
    post,
)
from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox  # noqa: F401
from erp.llm.models import UsageLog
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona, owner_connection

# --- rate limit ---------------------------------------------------------------------------


def test_the_21st_question_within_60_seconds_is_429_with_retry_after(
    owner_client: Any,
    member_client: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
):
    for i in range(20):
        assert post(owner_client, {"question": f"pregunta {i}"}).status_code == 200

    response = post(owner_client, {"question": "una más"})

    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert len(fake_google.generate_requests) == 20
    # another member has their own window
    assert post(member_client, {"question": "hola"}).status_code == 200


def test_rate_limit_holds_when_telemetry_is_failing(
    owner_client: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
    broken_telemetry: None,
):
    for i in range(20):
        assert post(owner_client, {"question": f"p{i}"}).status_code == 200
    assert post(owner_client, {"question": "p21"}).status_code == 429
    assert ChatQuery.objects.for_tenant(owner.tenant).count() == 0


@pytest.fixture
def broken_telemetry(db: Any) -> Any:
    """Every INSERT into the telemetry table fails in PostgreSQL itself: a trigger (DDL, so
    the owner creates it; the application's role may not), armed for this test's transaction
    only (its rollback disarms it; the trigger stays for the session, inert)."""
    table = ChatQuery._meta.db_table
    with owner_connection() as owner:
        owner.execute(
            "CREATE OR REPLACE FUNCTION correo_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN IF current_setting('test.refuse_telemetry', true) = 'on' THEN "
            "RAISE EXCEPTION 'telemetria rota'; END IF; RETURN NEW; END $$"
        )
        owner.execute(
            f"CREATE OR REPLACE TRIGGER correo_test_refuse BEFORE INSERT ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION correo_test_refuse()"
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('test.refuse_telemetry', 'on', false)")
    return None


def test_telemetry_failure_never_fails_the_answer(
    owner_client: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
    broken_telemetry: None,
):
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Todo bien."}))

    response = post(owner_client, {"question": "¿Qué tal?"})

    assert response.status_code == 200
    assert response.json()["answer"] == "Todo bien."
    assert ChatQuery.objects.for_tenant(owner.tenant).count() == 0


# --- failures -----------------------------------------------------------------------------


def test_model_timeouts_are_retried_then_502(
    owner_client: Any, owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_google.push(fake_google.hang(2.0), fake_google.hang(2.0))

    response = post(owner_client, {"question": "¿Hola?"})

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "llm_timeout"
    assert len(fake_google.requests) == 2  # 2 attempts, no more
    logs = UsageLog.objects.for_tenant(owner.tenant)
    assert logs.count() == 2 and not logs.filter(success=True).exists()


def test_a_timeout_then_an_answer_succeeds(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_google.push(
        fake_google.hang(2.0), fake_google.reply_json({"action": "responder", "answer": "Ya."})
    )

    response = post(owner_client, {"question": "¿Hola?"})

    assert response.status_code == 200 and response.json()["answer"] == "Ya."


def test_model_unavailable_after_retries_is_502(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_google.push(
        fake_google.unavailable(), fake_google.unavailable(), fake_google.unavailable()
    )

    response = post(owner_client, {"question": "¿Hola?"})

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "llm_unavailable"
    assert len(fake_google.requests) == 2


def test_production_retry_policy_is_the_spec():
    from erp.llm.gateway import CORREO

    assert secretary.DEFAULT_RETRY is CORREO
    assert CORREO.timeout_s == 40 and CORREO.attempts == 2


def test_no_model_configured_is_503(owner_client: Any, settings: Any, fake_mailbox: FakeMailbox):
    settings.GOOGLE_AI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""

    response = post(owner_client, {"question": "¿Hola?"})

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "llm_not_configured"


def test_mailbox_not_connected_is_503_with_the_connect_link(
    owner_client: Any, fake_google: FakeGoogle
):
    response = post(owner_client, {"question": "¿Hola?"})  # the real mailbox_for: no connection

    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "mailbox_not_connected"
    assert error["connect_url"] == "/correo/zoho/connect"
    assert "/correo/zoho/connect" in error["message"]
    assert fake_google.generate_requests == []


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (MailboxUnavailable("ZohoTimeout"), 502, "mailbox_unavailable"),
        (MailboxUnavailable("ZohoRateLimited"), 502, "mailbox_unavailable"),
        (MailboxNotConnected("ZohoAuthError"), 503, "mailbox_not_connected"),
    ],
)
def test_mailbox_failures_during_a_search(
    owner_client: Any,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
    error: Exception,
    status: int,
    code: str,
):
    fake_mailbox.error = error
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "x"}))

    response = post(owner_client, {"question": "¿Hola?"})

    assert response.status_code == status
    assert response.json()["error"]["code"] == code

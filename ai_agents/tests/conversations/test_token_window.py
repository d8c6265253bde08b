"""The tenant's tokens-per-minute window holds the tokens the model really spent once a message
is answered: the estimate counted before the call is corrected afterwards, in the round trip
of the reply's inbox event (a committed reply) or on its own (no commit seen: an enclosing
transaction, a failure after the model)."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.services import inbox_events
from ai_agents.tests.conversations.support import FAST, create_agent, send_message
from erp import ratelimit
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle

SPENT = 1000 + 500  # the fake model's usage below: far from the estimate of a short prompt


def _window(tenant: Tenant) -> int:
    """The tenant's tokens in the last minute (adding nothing)."""
    return ratelimit.add(f"tenant-tokens:{tenant.pk}", amount=0, window_s=60)


def _answer_with_usage(fake_google: FakeGoogle) -> None:
    reply = {"action": "respond", "answer": "Abrimos a las 9."}
    fake_google.push(fake_google.reply_json(reply, input_tokens=1000, output_tokens=500))


@pytest.mark.django_db(transaction=True)
def test_committed_reply_leaves_the_real_tokens_in_the_window_with_its_event(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a, processing_config={**FAST, "tokens_per_minute": 100_000})
    before = _window(tenant_a)
    _answer_with_usage(fake_google)
    response = send_message(api_a, agent_id, "¿A qué hora abren?")
    assert response.status_code == 200, response.content
    assert _window(tenant_a) - before == SPENT
    # The reply's event went out in that round trip too.
    events = inbox_events._redis().xrange(inbox_events.stream_key(tenant_a.pk))
    assert response.json()["conversation_id"].encode() in {e[1][b"conversation_id"] for e in events}


@pytest.mark.django_db
def test_reply_in_an_enclosing_transaction_still_corrects_the_window(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    """The test's transaction never commits, so no inbox event leaves: the correction is sent
    on its own, once."""
    agent_id = create_agent(api_a, processing_config={**FAST, "tokens_per_minute": 100_000})
    before = _window(tenant_a)
    _answer_with_usage(fake_google)
    assert send_message(api_a, agent_id, "¿A qué hora abren?").status_code == 200
    assert _window(tenant_a) - before == SPENT


@pytest.mark.django_db
def test_failure_after_the_model_still_corrects_the_window(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agents.conversations import phases

    agent_id = create_agent(api_a, processing_config={**FAST, "tokens_per_minute": 100_000})
    before = _window(tenant_a)
    _answer_with_usage(fake_google)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug after the model call")

    monkeypatch.setattr(phases, "number_field", broken)
    assert send_message(api_a, agent_id, "¿A qué hora abren?").status_code == 500
    assert _window(tenant_a) - before == SPENT

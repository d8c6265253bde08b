"""Fixtures of the e-mail channel tests: tenant A's binding; SMTP retries without waiting."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.channels.email import adapter as email_channel
from ai_agents.models import ChannelBinding
from ai_agents.tests.channels.email.support import email_binding
from erp.retry import Backoff


@pytest.fixture
def binding(tenant_a: Any) -> ChannelBinding:
    return email_binding(tenant_a)


@pytest.fixture(autouse=True)
def _no_retry_wait(monkeypatch: Any) -> None:
    monkeypatch.setattr(email_channel, "SEND_BACKOFF", Backoff(attempts=3, base_delay_s=0.0))

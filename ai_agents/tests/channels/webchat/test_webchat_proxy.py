"""The web chat's per-IP session limit under the real web server of `make run`: a client on
this machine cannot pick its address with a forged X-Forwarded-For."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from erp.embedded import free_port
from erp.supervisor import web_command
from erp.testing.celery_worker import _database_url
from erp.testing.processes import healthy, process, wait_until

pytestmark = pytest.mark.slow
ORIGIN = "https://shop.example"


@pytest.fixture
def public_key(transactional_db: Any, tenant_a: Any) -> str:
    from django.core.cache import cache

    cache.clear()  # per-IP counters
    agent = agent_create(tenant=tenant_a, data={"name": "Lucía", "system_prompt": "Eres Lucía."})
    binding = ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, agent=agent, type=ChannelBinding.Type.WEBCHAT, allowed_origins=[ORIGIN]
    )
    return str(binding.token)


def test_forged_forwarded_addresses_do_not_escape_the_session_limit(
    public_key: str, tmp_path: Path, settings: Any
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    limit, _window = webchat.IP_SESSIONS
    assert settings.TRUSTED_PROXY_HOPS == 0  # no proxy in front: REMOTE_ADDR is the client
    with process(web_command(port), {"DATABASE_URL": _database_url()}, tmp_path / "web.log"):
        wait_until("uvicorn healthy", lambda: healthy(base), timeout=60, every=0.2)
        statuses = [
            requests.post(
                f"{base}/api/webchat/{public_key}/sessions",
                json={},
                headers={"Origin": ORIGIN, "X-Forwarded-For": f"198.51.100.{n}"},
                timeout=10,
            ).status_code
            for n in range(limit + 5)
        ]
    assert statuses == [200] * limit + [429] * 5
    assert ChannelBinding.objects.unscoped().count() == 1

"""What the /api/correo/ask tests share: the URL, a POST, the prompt text, fast retries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from correo import secretary
from erp.llm.gateway import RetryPolicy

URL = "/api/correo/ask"
FAST = RetryPolicy(timeout_s=0.5, attempts=2, base_delay_s=0.01, factor=2, deadline_s=5)


def prompt_of(request: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for c in request["contents"] for p in c["parts"])


def post(client: Any, body: Any) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json")


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secretary, "RETRY", FAST)

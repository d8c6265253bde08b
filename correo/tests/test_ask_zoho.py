"""The secretary over the real Zoho adapter and the real HTML-to-text.

The Zoho client itself is replaced by a stub with its interface (`search`, `read_html`,
`list_recent`), so what is tested here is our side: error translation and that only visible
text reaches the model, inside the delimiters. The end-to-end tests at the bottom drive the
real client against the fake Zoho server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from correo import mailbox as mailbox_module
from correo import secretary
from correo.tests import fake_zoho as fake_zoho_module
from correo.tests.fakes import clean_cache, fake_mailbox  # noqa: F401
from correo.zoho import client as zoho
from erp.html_text import html_to_text
from erp.llm.gateway import RetryPolicy
from erp.testing.fake_google import FakeGoogle

DATA = Path(__file__).parent / "data"
MALICIOUS = json.loads((DATA / "zoho_message_content.json").read_text())["data"]["content"]


class StubClient:
    def __init__(self, *, html: str = "", error: Exception | None = None) -> None:
        self.html = html
        self.error = error

    def search(self, **kw: Any) -> list[Any]:
        if self.error:
            raise self.error
        return []

    def read_html(self, *, message_id: str, folder_id: str) -> str:
        if self.error:
            raise self.error
        return self.html

    def list_recent(self, **kw: Any) -> list[Any]:
        return []


@pytest.fixture
def use_client(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(secretary, "RETRY", RetryPolicy(timeout_s=2, attempts=2, base_delay_s=0))

    def install(client: StubClient) -> None:
        box = mailbox_module.ZohoMailbox(client, zoho, html_to_text)
        monkeypatch.setattr(mailbox_module, "mailbox_for", lambda user, tenant: box)

    return install


def ask(client: Any) -> Any:
    return client.post(
        "/api/correo/ask",
        data=json.dumps({"question": "¿Y la factura?"}),
        content_type="application/json",
    )


def test_hidden_instructions_in_a_mail_never_reach_the_model(
    owner_client: Any, fake_google: FakeGoogle, use_client: Any
):
    use_client(StubClient(html=MALICIOUS))
    fake_google.push(
        fake_google.reply_json({"action": "leer", "messageId": "1", "folderId": "2"}),
        fake_google.reply_json({"action": "responder", "answer": "Factura de 1.250 €."}),
    )

    assert ask(owner_client).status_code == 200

    prompt = "".join(
        p["text"] for c in fake_google.generate_requests[1]["contents"] for p in c["parts"]
    )
    data = prompt.split("<<<DATOS_DEL_BUZON")[-1].split("DATOS_DEL_BUZON>>>")[0]
    assert "Hi Rebecca" in data and "10423" in data  # visible text, as data
    for hidden in (
        "admin mode",
        "mark this sender as trusted",
        "ignore previous instructions",
        "hidden attribute text",
        "should never appear",
    ):
        assert hidden not in prompt


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        ("ZohoUnavailable", 502, "mailbox_unavailable"),
        ("ZohoTimeout", 502, "mailbox_unavailable"),
        ("ZohoRateLimited", 502, "mailbox_unavailable"),
        ("ZohoAuthError", 503, "mailbox_not_connected"),
        ("ZohoNotConnected", 503, "mailbox_not_connected"),
    ],
)
def test_zoho_errors_become_502_or_503(
    owner_client: Any, fake_google: FakeGoogle, use_client: Any, error: str, status: int, code: str
):
    use_client(StubClient(error=getattr(zoho, error)("fallo")))
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "factura"}))

    response = ask(owner_client)

    assert response.status_code == status
    assert response.json()["error"]["code"] == code


# --- end to end: the real Zoho client against the fake Zoho server --------------------------


@pytest.fixture
def zoho_e2e(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(secretary, "RETRY", RetryPolicy(timeout_s=2, attempts=2, base_delay_s=0))
    return fake_zoho_module


MARKER = "MARCADOR-ZOHO-a81c44"


def test_hetzner_example_through_the_zoho_client(
    zoho_e2e: Any,
    request: pytest.FixtureRequest,
    owner_client: Any,
    fake_google: FakeGoogle,
    caplog: pytest.LogCaptureFixture,
):
    from correo.tests.test_sensitive import rows_containing

    fake_zoho = request.getfixturevalue("fake_zoho")
    request.getfixturevalue("zoho_connection")
    caplog.set_level("DEBUG")
    fake_zoho.add_message(
        message_id="msg_123",
        subject="Server maintenance",
        from_address="alerts@hetzner.de",
        html=MALICIOUS.replace("Hi Rebecca", f"Your server was rebooted {MARKER}. Hi Rebecca"),
    )
    fake_zoho.add_message(message_id="msg_999", subject="Otro", from_address="x@y.test")
    answer = "El último aviso de Hetzner decía que tu servidor se reinició por mantenimiento."
    fake_google.push(
        fake_google.reply_json({"action": "buscar", "from": "alerts@hetzner.de"}),
        fake_google.reply_json(
            {"action": "leer", "messageId": "msg_123", "folderId": zoho_e2e.INBOX_ID}
        ),
        fake_google.reply_json({"action": "responder", "answer": answer}),
    )

    response = ask(owner_client)

    assert response.status_code == 200, response.content
    assert response.json()["answer"] == answer and response.json()["tool_rounds"] == 2
    second = "".join(
        p["text"] for c in fake_google.generate_requests[1]["contents"] for p in c["parts"]
    )
    assert "msg_123" in second and "msg_999" not in second  # searched by sender
    third = "".join(
        p["text"] for c in fake_google.generate_requests[2]["contents"] for p in c["parts"]
    )
    data = third.split("<<<DATOS_DEL_BUZON")[-1].split("DATOS_DEL_BUZON>>>")[0]
    assert MARKER in data and "admin mode" not in third
    assert rows_containing(MARKER) == []
    assert MARKER not in "\n".join(r.getMessage() for r in caplog.records)


def test_revoked_zoho_token_is_503_and_zoho_outage_is_502(
    zoho_e2e: Any, request: pytest.FixtureRequest, owner_client: Any, fake_google: FakeGoogle
):
    fake_zoho = request.getfixturevalue("fake_zoho")
    request.getfixturevalue("zoho_connection")
    fake_zoho.push_mail(*[zoho_e2e.mail_error(500, "INTERNAL_ERROR", "Internal")] * 5)
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "factura"}))

    response = ask(owner_client)

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "mailbox_unavailable"

    fake_zoho.reset()
    fake_zoho.revoke()
    from correo.zoho.client import reset_token_cache

    reset_token_cache()
    fake_zoho.expire_access_tokens()
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "factura"}))

    response = ask(owner_client)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "mailbox_not_connected"

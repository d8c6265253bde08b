from __future__ import annotations

from typing import Any

from correo.models import Digest
from correo.tests.fakes import clean_cache, fake_mailbox  # noqa: F401
from erp.testing.fixtures import Persona


def test_page_requires_a_staff_login(client: Any, db: Any):
    response = client.get("/correo/")

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/correo/")


def test_page_shows_mailbox_state_digest_and_uses_no_cdn(
    client: Any, owner: Persona, settings: Any
):
    from django.utils import timezone

    Digest.objects.for_tenant(owner.tenant).create(
        tenant=owner.tenant,
        owner=owner.user,
        generated_at=timezone.now(),
        resumen="3 correos urgentes, 12 normales",
    )
    client.force_login(owner.user)

    html = client.get("/correo/").content.decode()

    assert "Buzón sin conectar." in html and 'href="/correo/zoho/connect"' in html
    assert "3 correos urgentes, 12 normales" in html
    assert 'aria-live="polite"' in html and '<label for="question">' in html
    assert "https://" not in html.split("<body>")[0]  # no external CSS/JS
    assert 'src="/static/correo/chat.js"' in html
    assert "csrfmiddlewaretoken" in html


def test_page_in_english(client: Any, owner: Persona):
    client.force_login(owner.user)

    response = client.get("/correo/", HTTP_ACCEPT_LANGUAGE="en")

    assert response.status_code == 200
    assert '<html lang="en">' in response.content.decode()


def test_chat_script_never_touches_web_storage():
    from pathlib import Path

    js = (Path(__file__).parents[1] / "static" / "correo" / "chat.js").read_text()
    code = "\n".join(line for line in js.splitlines() if not line.strip().startswith("//"))
    assert "localStorage" not in code and "sessionStorage" not in code
    assert "document.cookie" not in code

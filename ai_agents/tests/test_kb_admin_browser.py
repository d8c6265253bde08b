"""The knowledge base admin page in Debian's Chromium with a real Celery worker: upload two
files, import a page served by a local HTTP server, paste a text; each becomes a document that
the page shows processed. A failing site is a message on the page. The start page then ticks
"Añadir documentos"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ai_agents.models import Document, KnowledgeBase
from ai_agents.services.knowledge import knowledge_base_create
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, PHONE, admin_login, context_new
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

INGEST_MS = 90_000  # the worker's first document also loads the local embedding model
PAGE = (
    b"<html><head><title>Horarios</title></head><body><h1>Horarios</h1>"
    b"<p>Abrimos de lunes a domingo de 7:00 a 21:00.</p></body></html>"
)

FILES: list[dict[str, Any]] = [
    {"name": "horario.md", "mimeType": "text/markdown", "buffer": b"# Horario\n\nAbrimos a las 8."},
    {"name": "envios.txt", "mimeType": "text/plain", "buffer": b"Enviamos en 24 horas."},
]


@pytest.fixture
def site() -> Iterator[FakeServer]:
    with FakeServer() as server:
        headers = {"Content-Type": "text/html; charset=utf-8"}
        server.route("GET", r"/horarios\.html", FakeResponse(body=PAGE, headers=headers))
        server.route("GET", r"/caido", FakeResponse(status=500))
        yield server


def _said(page: Any, text: str, kind: str = "") -> None:
    from playwright.sync_api import expect

    # The admin capitalises a message's first letter on screen.
    expect(page.locator(f".messagelist {kind}".strip())).to_contain_text(text, ignore_case=True)


def _ready(page: Any, title: str) -> None:
    from playwright.sync_api import expect

    row = page.locator("#kb-doc-rows tr", has=page.get_by_role("link", name=title, exact=True))
    expect(row).to_have_attribute("data-status", "ready", timeout=INGEST_MS)
    expect(row.locator(".kb-pct")).to_have_text("100%")
    assert int(row.locator(".kb-chunks").inner_text()) >= 1


def _step_done(page: Any, step: str) -> str | None:
    section = page.locator('.tenant-setup[data-tenant="acme"]')
    return section.locator(f'li[data-step="{step}"]').get_attribute("data-done")


def test_upload_import_and_paste_in_a_real_browser(
    browser: Any,
    asgi_server: str,
    celery_worker_process: Any,
    owner: Persona,
    site: FakeServer,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True  # the local site lives on loopback
    kb: KnowledgeBase = knowledge_base_create(tenant=owner.tenant, name="Ayuda")
    context = context_new(browser, base_url=asgi_server)
    try:
        page = context.new_page()
        admin_login(page, owner, "/")
        assert _step_done(page, "documents") == "false"
        page.locator('li[data-step="documents"] a').click()
        page.wait_for_url(f"**/admin/ai_agents/knowledgebase/{kb.pk}/change/")

        page.set_input_files("#kb-files", FILES)
        page.get_by_role("button", name="Subir", exact=True).click()
        for upload in FILES:
            _said(page, f"{upload['name']}: en cola.")
        for upload in FILES:
            _ready(page, upload["name"])

        url = f"{site.url}/horarios.html"
        page.fill("#kb-url-url", url)
        page.get_by_role("button", name="Importar", exact=True).click()
        _said(page, f"{url}: en cola.")
        _ready(page, url)

        page.fill("#kb-url-url", f"{site.url}/caido")
        page.get_by_role("button", name="Importar", exact=True).click()
        _said(page, "No se pudo descargar la dirección", ".error")

        page.fill("#kb-text-title", "Devoluciones")
        page.fill("#kb-text-text", "Aceptamos devoluciones durante 30 días con el ticket.")
        page.get_by_role("button", name="Añadir texto").click()
        _said(page, "Devoluciones: en cola.")
        _ready(page, "Devoluciones")
        page.screenshot(path=str(tmp_path / "kb_admin.png"), full_page=True)
        assert axe_check(page) == []

        documents = Document.objects.for_tenant(owner.tenant).filter(knowledge_base=kb)
        assert sorted(documents.values_list("source", "status")) == [
            ("text", "ready"),
            ("upload", "ready"),
            ("upload", "ready"),
            ("url", "ready"),
        ]

        page.goto("/")
        assert _step_done(page, "documents") == "true"
        assert axe_check(page) == []
    finally:
        context.close()


def test_the_three_forms_on_a_phone_in_english(
    browser: Any, asgi_server: str, owner: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    kb = knowledge_base_create(tenant=owner.tenant, name="Ayuda")
    phone = context_new(browser, base_url=asgi_server, locale="en-US", **PHONE)
    try:
        page = phone.new_page()
        admin_login(page, owner, f"/admin/ai_agents/knowledgebase/{kb.pk}/change/")
        sources = page.locator("#kb-documents .kb-sources")
        for heading in ("Upload files", "Import from a URL", "Paste text"):
            expect(sources.get_by_role("heading", name=heading)).to_be_visible()
        page.fill("#kb-text-title", "Returns")
        page.fill("#kb-text-text", "Returns within 30 days.")
        page.get_by_role("button", name="Add text").click()
        _said(page, "Returns: queued.")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        targets = page.locator(
            "#kb-documents :is(a, button, input:not([type=hidden]), textarea)"
        ).evaluate_all(
            "els => els.filter(e => e.offsetParent !== null)"
            ".map(e => [e.getBoundingClientRect().height, getComputedStyle(e).fontSize, e.id])"
        )
        assert [t for t in targets if t[0] < 44] == []
        fonts = [font for _height, font, _id in targets if _id]  # the form fields
        assert set(fonts) == {"16px"}
        page.screenshot(path=str(tmp_path / "kb_admin_phone_en.png"), full_page=True)
        assert axe_check(page) == []
    finally:
        phone.close()

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from ai_agents.models import Chunk, Document, KnowledgeBase
from ai_agents.services.knowledge import knowledge_base_create
from erp.tenancy.models import Tenant

pytestmark = pytest.mark.django_db


class _FormNesting(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.nested: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "form":
            name = dict(attrs).get("id") or "?"
            if self.open:
                self.nested.append(f"{name} inside {self.open[-1]}")
            self.open.append(name)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.open:
            self.open.pop()


def _nested_forms(html: str) -> list[str]:
    parser = _FormNesting()
    parser.feed(html)
    return parser.nested


def _login(persona: Any) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


@pytest.fixture
def kb(tenant_a: Tenant) -> KnowledgeBase:
    return knowledge_base_create(tenant=tenant_a, name="Ayuda")


def test_owner_uploads_several_files_and_sees_progress(
    owner: Any, kb: KnowledgeBase, run_tasks: Any
) -> None:
    client = _login(owner)
    page = client.get(f"/admin/ai_agents/knowledgebase/{kb.pk}/change/")
    assert page.status_code == 200
    assert _nested_forms(page.content.decode()) == []  # browsers drop a form inside a form
    for form_id in ("kb-upload-form", "kb-url-form", "kb-text-form"):
        assert f'<form class="kb-source" id="{form_id}"' in page.content.decode()

    with run_tasks():
        response = client.post(
            f"/admin/ai_agents/knowledgebase/{kb.pk}/add/upload/",
            {
                "files": [
                    SimpleUploadedFile("a.md", b"# Horario\n\nAbrimos a las 8.", "text/markdown"),
                    SimpleUploadedFile("b.txt", b"Cerramos a las 20 horas.", "text/plain"),
                    SimpleUploadedFile("c.txt", b"", "text/plain"),
                ]
            },
        )
    assert response.status_code == 302
    status = client.get(f"/admin/ai_agents/knowledgebase/{kb.pk}/status/").json()
    rows = {d["title"]: d for d in status["documents"]}
    assert set(rows) == {"a.md", "b.txt"}  # the empty file was refused with a message
    assert all(d["status"] == "ready" and d["progress"] == 100 for d in rows.values())

    document = Document.objects.for_tenant(kb.tenant).get(title="a.md")
    detail = client.get(f"/admin/ai_agents/document/{document.pk}/change/")
    assert detail.status_code == 200
    assert "Abrimos a las 8." in detail.content.decode()  # chunk preview

    old = set(Chunk.objects.for_tenant(kb.tenant).values_list("pk", flat=True))
    with run_tasks():
        client.post(
            "/admin/ai_agents/document/",
            {"action": "reindex", "_selected_action": [str(document.pk)]},
        )
    new = set(Chunk.objects.for_tenant(kb.tenant).values_list("pk", flat=True))
    assert len(new) == len(old) and new != old


def test_outsider_cannot_see_or_upload(outsider: Any, kb: KnowledgeBase) -> None:
    client = _login(outsider)
    assert client.get(f"/admin/ai_agents/knowledgebase/{kb.pk}/status/").status_code == 404
    assert client.get(f"/admin/ai_agents/knowledgebase/{kb.pk}/change/").status_code == 404
    response = client.post(
        f"/admin/ai_agents/knowledgebase/{kb.pk}/add/upload/",
        {"files": [SimpleUploadedFile("x.txt", b"intruso", "text/plain")]},
    )
    assert response.status_code == 404
    assert Document.objects.unscoped().count() == 0


def _messages_after(client: Client, kb: KnowledgeBase, source: str, data: dict[str, Any]) -> str:
    response = client.post(
        f"/admin/ai_agents/knowledgebase/{kb.pk}/add/{source}/", data, follow=True
    )
    assert response.status_code == 200
    assert response.redirect_chain[0][0] == f"/admin/ai_agents/knowledgebase/{kb.pk}/change/"
    return " | ".join(str(m) for m in response.context["messages"])


def test_bad_url_or_text_is_a_message_on_the_page(owner: Any, kb: KnowledgeBase) -> None:
    client = _login(owner)
    said = _messages_after(client, kb, "url", {"url": "no es una dirección"})
    assert said == "Dirección (URL): Introduzca una URL válida."
    said = _messages_after(client, kb, "url", {"url": "http://127.0.0.1:9/secreto"})
    assert said == (
        "http://127.0.0.1:9/secreto: La dirección no está permitida: solo se admiten "
        "direcciones públicas."
    )
    said = _messages_after(client, kb, "text", {"title": "Vacío", "text": "   \n"})
    assert said == "Vacío: El documento está vacío."
    said = _messages_after(client, kb, "text", {"title": "", "text": "Hola"})
    assert said == "Título: Este campo es requerido."
    said = _messages_after(client, kb, "upload", {})
    assert said == "Elija al menos un archivo."
    response = client.post(f"/admin/ai_agents/knowledgebase/{kb.pk}/add/otra/", {})
    assert response.status_code == 404
    assert Document.objects.for_tenant(kb.tenant).count() == 0


def test_pasted_text_becomes_a_document(owner: Any, kb: KnowledgeBase, run_tasks: Any) -> None:
    client = _login(owner)
    text = "# Envíos\n\nEnviamos a toda la ciudad en 24 horas."
    with run_tasks():
        said = _messages_after(client, kb, "text", {"title": "Envíos", "text": text})
    assert said == "Envíos: en cola."
    document = Document.objects.for_tenant(kb.tenant).get()
    assert (document.title, document.source, document.status) == ("Envíos", "text", "ready")
    assert bytes(document.data).decode() == text


def test_outsider_cannot_import_or_paste(outsider: Any, kb: KnowledgeBase) -> None:
    client = _login(outsider)
    for source, data in (
        ("url", {"url": "https://example.com/"}),
        ("text", {"title": "x", "text": "y"}),
    ):
        response = client.post(f"/admin/ai_agents/knowledgebase/{kb.pk}/add/{source}/", data)
        assert response.status_code == 404
    assert Document.objects.unscoped().count() == 0


def test_member_of_both_tenants_adds_to_each_base_under_its_tenant(
    owner: Any, outsider: Any, kb: KnowledgeBase
) -> None:
    from erp.testing.factories import MembershipFactory

    theirs = knowledge_base_create(tenant=outsider.tenant, name="Ayuda")
    MembershipFactory.create(tenant=outsider.tenant, user=owner.user)
    client = _login(owner)
    for base, title in ((kb, "De Acme"), (theirs, "De Globex")):
        said = _messages_after(client, base, "text", {"title": title, "text": f"Texto {title}."})
        assert said == f"{title}: en cola."
    rows = Document.objects.unscoped().values_list("tenant__slug", "knowledge_base_id", "title")
    assert sorted(rows) == [("acme", kb.pk, "De Acme"), ("globex", theirs.pk, "De Globex")]


def test_agent_role_may_read_but_not_add(member: Any, kb: KnowledgeBase) -> None:
    client = _login(member)
    page = client.get(f"/admin/ai_agents/knowledgebase/{kb.pk}/change/").content.decode()
    assert 'id="kb-doc-rows"' in page and 'id="kb-text-form"' not in page
    response = client.post(
        f"/admin/ai_agents/knowledgebase/{kb.pk}/add/text/", {"title": "x", "text": "y"}
    )
    assert response.status_code == 403
    assert Document.objects.unscoped().count() == 0

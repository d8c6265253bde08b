"""Documents imported from a URL: fetched through the SSRF guard, then ingested like uploads."""

import pytest

from ai_agents.models import Document
from ai_agents.services.knowledge import knowledge_base_create
from erp.testing.fake_http import FakeResponse, FakeServer

pytestmark = pytest.mark.django_db

PAGE = (
    b"<html><head><title>x</title></head><body><h1>Horarios</h1>"
    b"<p>Abrimos de lunes a domingo de 7:00 a 21:00.</p></body></html>"
)


@pytest.fixture
def site():
    with FakeServer() as server:
        server.route(
            "GET",
            r"/horarios\.html",
            FakeResponse(body=PAGE, headers={"Content-Type": "text/html; charset=utf-8"}),
        )
        server.route(
            "GET", r"/viejo", FakeResponse(status=301, headers={"Location": "/horarios.html"})
        )
        server.route("GET", r"/caido", FakeResponse(status=500))
        yield server


def url_of(site, path):
    return f"{site.url}{path}"


def test_public_page_is_fetched_and_ingested(api_a, tenant_a, site, settings, run_tasks):
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True  # the fake site lives on loopback
    kb = knowledge_base_create(tenant=tenant_a, name="Web")
    with run_tasks():
        response = api_a.post(
            f"/api/v1/knowledge-bases/{kb.pk}/documents",
            {"url": url_of(site, "/viejo")},
            format="json",
        )
    assert response.status_code == 202, response.json()
    document = Document.objects.for_tenant(tenant_a).get(pk=response.json()["id"])
    assert document.source == "url"
    assert document.title == url_of(site, "/viejo")
    assert document.mime_type == "text/html"
    assert document.status == "ready"
    search = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/search",
        {"query": "a que hora abren", "k": 1},
        format="json",
    )
    assert "7:00 a 21:00" in search.json()["results"][0]["content"]


def test_private_address_is_refused_without_the_setting(api_a, tenant_a, site):
    kb = knowledge_base_create(tenant=tenant_a, name="Web")
    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/documents",
        {"url": url_of(site, "/horarios.html")},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "url"
    assert not site.requests  # never connected
    assert Document.objects.for_tenant(tenant_a).count() == 0


def test_unreachable_or_failing_site_is_502_and_stores_nothing(api_a, tenant_a, site, settings):
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True
    kb = knowledge_base_create(tenant=tenant_a, name="Web")
    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/documents", {"url": url_of(site, "/caido")}, format="json"
    )
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "url_fetch_failed"
    # In words, not the error's type name (that goes to the log).
    assert response.json()["error"]["message"] == (
        "No se pudo descargar la dirección: el sitio respondió con el error HTTP 500."
    )
    assert Document.objects.for_tenant(tenant_a).count() == 0


def test_bad_url_is_400(api_a, tenant_a):
    kb = knowledge_base_create(tenant=tenant_a, name="Web")
    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/documents", {"url": "ftp://example.com/x"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "url"


@pytest.mark.parametrize(
    "extra",
    [{"text": "Abrimos a las 8."}, {"text": "Abrimos a las 8.", "title": "Horario"}],
    ids=["text", "text-and-title"],
)
def test_url_and_text_together_are_refused_without_fetching(api_a, tenant_a, site, settings, extra):
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True
    kb = knowledge_base_create(tenant=tenant_a, name="Web")

    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/documents",
        {"url": url_of(site, "/horarios.html"), **extra},
        format="json",
    )

    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"
    assert set(response.json()["error"]["fields"]) == {"non_field_errors"}
    assert site.requests_snapshot() == []
    assert Document.objects.for_tenant(tenant_a).count() == 0


def test_a_file_with_a_url_is_refused_without_fetching(api_a, tenant_a, site, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True
    kb = knowledge_base_create(tenant=tenant_a, name="Web")
    upload = SimpleUploadedFile("horario.txt", b"Abrimos a las 8.", content_type="text/plain")

    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/documents",
        {"url": url_of(site, "/horarios.html"), "file": upload},
        format="multipart",
    )

    assert response.status_code == 400, response.json()
    assert set(response.json()["error"]["fields"]) == {"non_field_errors"}
    assert site.requests_snapshot() == []
    assert Document.objects.for_tenant(tenant_a).count() == 0


def test_a_multipart_title_with_a_nul_byte_is_a_400_not_a_500(api_a, tenant_a):
    kb = knowledge_base_create(tenant=tenant_a, name="Web")
    body = (
        b"--XX\r\n"
        b'Content-Disposition: form-data; name="title"\r\n\r\nHo\x00rario\r\n'
        b"--XX\r\n"
        b'Content-Disposition: form-data; name="file"; filename="h.txt"\r\n'
        b"Content-Type: text/plain\r\n\r\nAbrimos a las 8.\r\n"
        b"--XX--\r\n"
    )

    response = api_a.generic(
        "POST",
        f"/api/v1/knowledge-bases/{kb.pk}/documents",
        body,
        content_type="multipart/form-data; boundary=XX",
    )

    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "title"
    assert Document.objects.for_tenant(tenant_a).count() == 0

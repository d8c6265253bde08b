"""Errors under /api/ and /webhooks/ are JSON in the API's error shape, never HTML, never 500."""

import json
import logging

import pytest
from django.core.management import call_command
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.urls("erp.tests.urls_errors")]


def assert_json_error(response, status, code):
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body


def test_malformed_json_is_400(client):
    response = client.post("/api/v1/echo", data="{not json", content_type="application/json")
    assert_json_error(response, 400, "parse_error")


def test_wrong_content_type_is_415(client):
    response = client.post("/api/v1/echo", data="a=1", content_type="text/plain")
    assert_json_error(response, 415, "unsupported_media_type")


def test_oversized_api_body_is_413_before_parsing(client, settings):
    settings.API_MAX_BODY_BYTES = 1000
    response = client.post(
        "/api/v1/echo", data=json.dumps({"x": "a" * 2000}), content_type="application/json"
    )
    body = assert_json_error(response, 413, "payload_too_large")
    assert body["error"]["limit_bytes"] == 1000


def test_default_api_limit_is_one_megabyte(client):
    ok = client.post(
        "/api/v1/echo", data=json.dumps({"x": "a" * 900_000}), content_type="application/json"
    )
    assert ok.status_code == 200
    too_big = client.post(
        "/api/v1/echo", data=json.dumps({"x": "a" * 1_100_000}), content_type="application/json"
    )
    assert_json_error(too_big, 413, "payload_too_large")


def test_uploads_have_a_larger_limit(client, settings):
    settings.API_MAX_BODY_BYTES = 1000
    settings.UPLOAD_MAX_BYTES = 5000
    ok = client.post(
        "/api/v1/kb/1/documents",
        data=json.dumps({"x": "a" * 3000}),
        content_type="application/json",
    )
    assert ok.status_code == 200
    too_big = client.post(
        "/api/v1/kb/1/documents",
        data=json.dumps({"x": "a" * 6000}),
        content_type="application/json",
    )
    assert_json_error(too_big, 413, "payload_too_large")


@pytest.mark.parametrize("path", ["/api/v1/nope", "/webhooks/nope", "/api/nope"])
def test_unknown_route_is_404_json(client, path):
    assert_json_error(client.get(path), 404, "not_found")


def test_wrong_method_is_405_json(client):
    response = client.get("/webhooks/plain")
    assert_json_error(response, 405, "method_not_allowed")
    assert response["Allow"] == "POST"
    drf = client.get("/api/v1/echo")
    assert_json_error(drf, 405, "method_not_allowed")


def test_a_tenant_request_that_fails_leaves_no_scope_behind(tenant_a):
    """The next request served by the same thread must not inherit the failed one's tenant."""
    from erp.tenancy.models import ApiKey
    from erp.tenancy.scoping import TenantScopeError
    from erp.testing.fixtures import api_client_for

    response = api_client_for(tenant_a).get("/api/v1/tenant-boom")

    assert response.status_code == 500
    with pytest.raises(TenantScopeError):
        list(ApiKey.objects.all())


@pytest.mark.parametrize("path", ["/api/v1/boom", "/webhooks/boom"])
def test_unhandled_error_is_500_json_without_details(path, caplog):
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.ERROR):
        response = client.get(path)
    body = assert_json_error(response, 500, "server_error")
    assert "kaboom" not in json.dumps(body)


def test_pages_outside_api_keep_html_errors(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_healthz_reports_database_and_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": True, "broker": True}}


def test_healthz_is_503_when_broker_is_down(client, settings):
    settings.REDIS_URL = "unix:///nonexistent/valkey.sock"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"] == {"database": True, "broker": False}


def test_api_docs_and_schema_served_offline(client):
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()
    assert b"/static/drf_spectacular_sidecar/" in docs.content
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/v1/api-keys" in schema.json()["paths"]
    schemes = schema.json()["components"]["securitySchemes"]
    assert schemes["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A tenant's API key: `Authorization: Bearer <key>`.",
    }
    assert (schemes["staffSession"]["in"], schemes["staffSession"]["name"]) == (
        "cookie",
        "sessionid",
    )
    keys = schema.json()["paths"]["/api/v1/api-keys"]["get"]
    assert {"apiKey": []} in keys["security"] and {"staffSession": []} in keys["security"]


@pytest.mark.urls("erp.urls")
def test_the_schema_is_generated_without_warnings(tmp_path):
    """Every view is described (none skipped for lack of a serializer, every authentication
    scheme known): `spectacular --fail-on-warn` raises otherwise."""
    target = tmp_path / "schema.yml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(target))
    assert "securitySchemes" in target.read_text()

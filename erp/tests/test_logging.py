"""LOG_FORMAT=json gives JSON lines carrying the request id of the request."""

import json
import logging

import pytest
from django.test import Client

from erp.logging import JsonFormatter, RequestIdFilter, clean_request_id, request_id_var

pytestmark = pytest.mark.django_db


def test_request_id_is_taken_from_header_or_generated(client):
    given = client.get("/healthz", HTTP_X_REQUEST_ID="abc-123")
    assert given["X-Request-ID"] == "abc-123"
    generated = client.get("/healthz")
    assert len(generated["X-Request-ID"]) == 32
    hostile = client.get("/healthz", HTTP_X_REQUEST_ID="x" * 500 + "\n")
    assert hostile["X-Request-ID"] != "x" * 500 + "\n"


@pytest.mark.urls("erp.tests.urls_errors")
def test_log_lines_of_a_request_carry_its_id():
    records: list[logging.LogRecord] = []

    class Capture(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = Capture()
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("erp.middleware")
    logger.addHandler(handler)
    try:
        Client(raise_request_exception=False).get("/api/v1/boom", HTTP_X_REQUEST_ID="req-42")
    finally:
        logger.removeHandler(handler)
    assert [r.request_id for r in records if r.getMessage() == "unhandled_error"] == ["req-42"]  # type: ignore[attr-defined]  # added by erp.logging
    assert request_id_var.get() == "-"  # restored after the request


def test_json_formatter_outputs_one_json_object_with_request_id_and_extras():
    record = logging.makeLogRecord(
        {
            "name": "erp.x",
            "levelname": "INFO",
            "msg": "ticket %s",
            "args": ("done",),
            "conversation_id": "c-1",
        }
    )
    token = request_id_var.set("rid-7")
    try:
        RequestIdFilter().filter(record)
    finally:
        request_id_var.reset(token)
    line = JsonFormatter().format(record)
    payload = json.loads(line)
    assert payload["message"] == "ticket done"
    assert payload["request_id"] == "rid-7"
    assert payload["conversation_id"] == "c-1"
    assert payload["level"] == "INFO"


def test_clean_request_id_rejects_garbage():
    assert clean_request_id("ok_id-1.2:3") == "ok_id-1.2:3"
    assert clean_request_id("bad id") != "bad id"
    assert clean_request_id(None)

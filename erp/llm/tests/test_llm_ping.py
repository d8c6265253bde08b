"""`manage.py llm_ping` against the fake Google API."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle


def test_ping_prints_answer_latency_tokens_and_records_usage(
    fake_google: FakeGoogle, tenant_a: Tenant
):
    fake_google.push(fake_google.reply("pong", input_tokens=9, output_tokens=1))
    out = StringIO()

    call_command("llm_ping", "--tenant", tenant_a.slug, "--model", "gemini-2.5-flash", stdout=out)

    text = out.getvalue()
    assert "proveedor: google, modelo: gemini-2.5-flash" in text
    assert "respuesta: pong" in text
    assert "tokens: 9 de entrada, 1 de salida" in text
    assert fake_google.requests[0].path.endswith("/models/gemini-2.5-flash:generateContent")
    log = UsageLog.objects.for_tenant(tenant_a).get()
    assert (log.success, log.input_tokens, log.model) == (True, 9, "gemini-2.5-flash")


def test_ping_without_tenant_records_nothing(fake_google: FakeGoogle, db: Any):
    out = StringIO()
    call_command("llm_ping", stdout=out)
    assert "consumo no registrado" in out.getvalue()
    assert UsageLog.objects.unscoped().count() == 0


def test_ping_failure_is_a_clear_error(fake_google: FakeGoogle, tenant_a: Tenant):
    fake_google.default = fake_google.invalid_key()

    with pytest.raises(CommandError) as caught:
        call_command("llm_ping", "--tenant", tenant_a.slug)

    assert "AuthFailed" in str(caught.value) and "revise la clave" in str(caught.value)
    assert "fake-google-key" not in str(caught.value)
    assert UsageLog.objects.for_tenant(tenant_a).get().success is False


def test_ping_unconfigured_provider(settings: Any, db: Any):
    settings.GOOGLE_AI_API_KEY = None
    with pytest.raises(CommandError, match="no configurado"):
        call_command("llm_ping", "--provider", "google")


def test_ping_exits_non_zero(fake_google: FakeGoogle, tmp_path: Any):
    """A real process: operators see the message and a failing exit status."""
    fake_google.default = fake_google.unavailable()
    env = {
        **__import__("os").environ,
        "GOOGLE_AI_BASE_URL": fake_google.url,
        "GOOGLE_AI_API_KEY": "k",
        "SECRET_KEY": "x",
    }
    proc = subprocess.run(
        [sys.executable, "manage.py", "llm_ping", "--no-ledger", "--timeout", "5"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "Unavailable" in proc.stderr

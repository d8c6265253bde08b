# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fake_zoho)
"""Property-based fuzzing of every operation of the OpenAPI schema (schemathesis + hypothesis).

Each operation gets `FUZZ_MAX_EXAMPLES` generated requests (valid and invalid bodies, query
strings and path parameters), each sent twice: with an API key of tenant A and with the
session of a staff user who belongs to tenants A and B (`X-Tenant: acme`, CSRF token). The
path parameters are alternately the generated ones and the ids of real rows (agent, knowledge
base, document, channel, conversation, API key), so the fuzzer reaches the views' logic and not
only their 404s. The properties: no 5xx, and every 4xx is JSON in the
API's error shape (erp/api/errors.py).

Every example runs in a savepoint rolled back afterwards, so a generated DELETE never takes
the seeded rows away from the next one. Model calls go to the fake Google server; a URL import
resolves no host (no network), so its documented answer is 502 `url_fetch_failed`. The staff
user's mailbox is connected to the fake Zoho, so the secretary reaches the model too.

Selected with `-m fuzz`; part of the normal suite (`make test`, CI). Deterministic
(`derandomize`): set FUZZ_MAX_EXAMPLES higher and FUZZ_RANDOM=1 for a longer exploration.
"""

from __future__ import annotations

import os
import socket
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client
from hypothesis import HealthCheck, Phase, given, strategies
from hypothesis import settings as hypothesis_settings
from schemathesis.generation import GenerationMode

from ai_agents.conversations.inbound import Inbound, message_receive
from ai_agents.models import ChannelBinding, Conversation
from ai_agents.services.agents import agent_create
from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from correo.tests.factories import zoho_connection_create
from correo.tests.fake_zoho import _fake_zoho_server, fake_zoho  # noqa: F401 (fixtures)
from erp.tenancy.models import Membership
from erp.tenancy.services import apikey_create
from erp.testing.factories import MembershipFactory, UserFactory

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "25"))
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}
# The documented 5xx: the remote site of a URL import failed (here: no DNS, by design).
EXPECTED_5XX = {(502, "url_fetch_failed")}


@pytest.fixture
def fuzz_world(
    _test_transaction_kept: None,
    tenant_a: Any,
    tenant_b: Any,
    fake_google: Any,
    fake_zoho: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    """Real rows of tenant A (and one of B) and the credentials."""

    def no_dns(host: str, port: int) -> list[str]:
        raise socket.gaierror(f"no DNS in the fuzz test: {host}")

    monkeypatch.setattr("erp.http.guard.resolve", no_dns)
    user = UserFactory(username="staff@both.test", is_staff=True)
    MembershipFactory(tenant=tenant_a, user=user, role=Membership.Role.OWNER)
    MembershipFactory(tenant=tenant_b, user=user, role=Membership.Role.AGENT)
    zoho_connection_create(owner=user, tenant=tenant_a)  # the secretary reads the fake Zoho
    agent = agent_create(
        tenant=tenant_a,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )
    agent_create(tenant=tenant_b, data={"name": "Globo", "system_prompt": "Eres Globo."})
    kb = knowledge_base_create(tenant=tenant_a, name="Ayuda")
    document = document_add(kb=kb, data=b"# Horario\n\nAbrimos a las 8.", filename="h.md")
    channel = ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a,
        agent=agent,
        type=ChannelBinding.Type.WEBCHAT,
        allowed_origins=["https://shop.example"],
    )
    message, _created = message_receive(
        agent=agent, inbound=Inbound(text="hola", contact={"external_id": "c-1"}), answer=False
    )
    conversation = Conversation.objects.for_tenant(tenant_a).get(pk=message.conversation_id)
    key = apikey_create(tenant=tenant_a, name="fuzz")
    other_key = apikey_create(tenant=tenant_a, name="fuzz-target")

    browser = Client()
    browser.force_login(user)  # a real session, in whatever SESSION_ENGINE is configured
    session_cookie = browser.cookies[settings.SESSION_COOKIE_NAME]
    csrf = _get_new_csrf_string()

    auths = [
        {"headers": {"Authorization": f"Bearer {key.key}"}, "cookies": {}},
        {
            "headers": {"X-CSRFToken": csrf, "X-Tenant": tenant_a.slug},
            "cookies": {session_cookie.key: session_cookie.value, settings.CSRF_COOKIE_NAME: csrf},
        },
    ]
    for auth in auths:  # both credentials work (else the fuzzer would only meet 401s)
        probe = schemathesis_get(SCHEMA, "/api/v1/tenant", auth)
        assert probe == 200
    return {
        "ids": {
            "agent_id": str(agent.pk),
            "kb_id": str(kb.pk),
            "doc_id": str(document.document.pk),
            "channel_id": str(channel.pk),
            "conversation_id": str(conversation.pk),
            "key_id": str(other_key.api_key.pk),
        },
        "auths": auths,
    }


@pytest.fixture
def _test_transaction_kept(db: Any) -> Iterator[None]:
    """Django closes "old" connections when a request starts and ends; inside the test's
    transaction that would end it. Django's test client disconnects these too."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _load_schema() -> Any:
    """The schema as the app serves it (no database needed to build it)."""
    from erp.wsgi import application

    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
    # The credentials are ours (both kinds, on every case); generated ones would only be 401s.
    schema.config.generation.update(with_security_parameters=False)
    return schema


SCHEMA = _load_schema()
OPERATIONS = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}
GENERATED: Counter[str] = Counter()
STATUSES: Counter[int] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _fuzz_summary(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    plugins = request.config.pluginmanager
    reporter = plugins.get_plugin("terminalreporter")
    capture = plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None and GENERATED:
        with capture.global_and_fixture_disabled():
            reporter.write_line(
                f"\nfuzz: {len(GENERATED)} operations, {sum(GENERATED.values())} cases, "
                f"{sum(STATUSES.values())} requests, statuses {dict(sorted(STATUSES.items()))}"
            )


def _error_shape_problem(status: int, response: Any) -> str | None:
    headers = {name.lower(): value for name, value in response.headers.items()}
    content_type = headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    if not content_type.startswith("application/json"):
        return f"{status} with Content-Type {content_type!r}"
    try:
        body = response.json()
    except ValueError:
        return f"{status} whose body is not JSON"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return f"{status} without an error object: {str(body)[:200]}"
    if not isinstance(error.get("code"), str) or not isinstance(error.get("message"), str):
        return f"{status} without code/message strings: {str(error)[:200]}"
    return None


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_no_operation_answers_5xx_and_every_4xx_has_the_error_shape(
    label: str, fuzz_world: dict[str, Any]
) -> None:
    operation = OPERATIONS[label]
    cases = strategies.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )

    @given(case=cases)
    @hypothesis_settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=os.environ.get("FUZZ_RANDOM") != "1",
        phases=[Phase.explicit, Phase.generate],  # report the first failing case, no shrinking
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(case: Any) -> None:
        GENERATED[label] += 1
        _check(case, fuzz_world)

    run()


def _check(case: Any, fuzz_world: dict[str, Any]) -> None:
    real_ids = zlib.crc32(repr((case.path_parameters, case.body)).encode()) % 2 == 0
    if real_ids and case.path_parameters:
        case.path_parameters = {
            name: fuzz_world["ids"].get(name, str(uuid.uuid4())) for name in case.path_parameters
        }
    problems = []
    for auth in fuzz_world["auths"]:
        with transaction.atomic():
            response = case.call(headers=auth["headers"], cookies=auth["cookies"])
            transaction.set_rollback(True)
        status = response.status_code
        STATUSES[status] += 1
        if status >= 500:
            code = _code(response)
            if (status, code) not in EXPECTED_5XX:
                problems.append(f"{status} {code}: {response.text[:300]}")
        elif status >= 400:
            problem = _error_shape_problem(status, response)
            if problem:
                problems.append(problem)
    assert problems == [], f"{case.method} {case.formatted_path}: {problems}"


def schemathesis_get(schema: Any, path: str, auth: dict[str, Any]) -> int:
    """The status of a plain GET through the same transport the fuzzer uses."""
    operation = schema[path]["GET"]
    case = operation.Case()
    return int(case.call(headers=auth["headers"], cookies=auth["cookies"]).status_code)


def _code(response: Any) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""

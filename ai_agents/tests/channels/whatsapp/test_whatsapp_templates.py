"""The binding's WhatsApp templates synced from the Graph API (`/{waba_id}/message_templates`,
paged): every page read, status changes applied, templates Meta dropped marked DELETED, nothing
changed when Graph fails; the command, the daily task's service, the admin's read-only list
with its "Sincronizar" action, and two tenants kept apart."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from ai_agents.channels.whatsapp import templates as wire
from ai_agents.models import WhatsAppTemplate
from ai_agents.services.whatsapp_templates import (
    TemplateSyncError,
    whatsapp_templates_sync,
    whatsapp_templates_sync_all,
)
from ai_agents.tests.channels.whatsapp.support import NUMBER_B, binding_create
from ai_agents.tests.channels.whatsapp.templates_support import (
    NAMED,
    ORDER_UPDATE,
    SURVEY,
    TOKEN_A,
    WABA_A,
    WABA_B,
    account_ready,
)
from erp.testing.fake_graph import FakeGraph


def _rows(tenant: Any) -> list[tuple[str, str, str, str, list[str]]]:
    rows = WhatsAppTemplate.objects.for_tenant(tenant).order_by("name")
    return [(t.name, t.language, t.category, t.status, t.variables) for t in rows]


@pytest.mark.django_db
def test_every_page_is_read_and_stored_with_its_variables(
    wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, monkeypatch: Any
) -> None:
    monkeypatch.setattr(wire, "PAGE_SIZE", 2)
    rejected = FakeGraph.template("vieja", "Texto", status="REJECTED")

    account_ready(fake_graph, wa_binding, [ORDER_UPDATE, SURVEY, NAMED, rejected])

    assert _rows(tenant_a) == [
        ("cita", "es", "utility", "APPROVED", ["first_name", "fecha"]),
        ("encuesta", "es", "marketing", "APPROVED", []),
        ("order_update", "en_US", "utility", "APPROVED", ["1", "2"]),
        ("vieja", "es", "utility", "REJECTED", []),
    ]
    pages = fake_graph.template_lists
    assert [r.query.get("after") for r in pages] == [None, ["Mg=="]]
    assert pages[0].header("authorization") == f"Bearer {TOKEN_A}"
    assert pages[0].query["fields"] == [wire.FIELDS]


@pytest.mark.django_db
def test_a_second_sync_applies_status_changes_and_marks_dropped_templates(
    wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE, SURVEY])
    paused = {**SURVEY, "status": "PAUSED"}
    fake_graph.templates_put(WABA_A, [paused, NAMED], token=TOKEN_A)

    result = whatsapp_templates_sync(binding=wa_binding)

    assert result.as_dict() == {"created": 1, "updated": 1, "removed": 1}
    assert _rows(tenant_a) == [
        ("cita", "es", "utility", "APPROVED", ["first_name", "fecha"]),
        ("encuesta", "es", "marketing", "PAUSED", []),
        ("order_update", "en_US", "utility", "DELETED", ["1", "2"]),
    ]


@pytest.mark.django_db
def test_graph_failing_changes_nothing(
    wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    fake_graph.templates_error = fake_graph.error(190, status=401)

    with pytest.raises(TemplateSyncError) as raised:
        whatsapp_templates_sync(binding=wa_binding)

    assert "190" in raised.value.message
    assert [row[0] for row in _rows(tenant_a)] == ["order_update"]


@pytest.mark.django_db
def test_two_tenants_sync_their_own_accounts_only(
    wa_binding: Any, tenant_a: Any, tenant_b: Any, fake_graph: FakeGraph
) -> None:
    binding_b = binding_create(tenant_b, NUMBER_B, token="EAAG-token-b", waba_id=WABA_B)
    fake_graph.templates_put(WABA_B, [SURVEY], token="EAAG-token-b")
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])

    assert whatsapp_templates_sync_all() == 2

    assert [row[0] for row in _rows(tenant_a)] == ["order_update"]
    assert [row[0] for row in _rows(tenant_b)] == ["encuesta"]
    assert WhatsAppTemplate.objects.for_tenant(tenant_b).get().binding_id == binding_b.pk
    # B's token never reads A's account (Graph's answer to a foreign token: nothing changes).
    binding_b.waba_id = WABA_A
    with pytest.raises(TemplateSyncError):
        whatsapp_templates_sync(binding=binding_b)
    assert [row[0] for row in _rows(tenant_b)] == ["encuesta"]


@pytest.mark.django_db
def test_one_channels_unexpected_error_does_not_stop_the_others(
    wa_binding: Any, tenant_b: Any, fake_graph: FakeGraph, caplog: Any
) -> None:
    """The least recently synced channel goes first (B never synced); Graph answers it a
    malformed list (an unexpected error): logged, counted, and A is synced all the same."""
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b", waba_id=WABA_B)
    fake_graph.templates_put(WABA_B, [{**SURVEY, "components": 5}], token="EAAG-token-b")
    fake_graph.templates_put(WABA_A, [ORDER_UPDATE, SURVEY], token=TOKEN_A)
    before = len(fake_graph.template_lists)

    assert whatsapp_templates_sync_all() == 1

    paths = [r.path for r in fake_graph.template_lists[before:]]
    assert [p.split("/")[-2] for p in paths] == [WABA_B, WABA_A]
    assert [row[0] for row in _rows(wa_binding.tenant)] == ["encuesta", "order_update"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "whatsapp.templates_sync_crashed"
    ]
    assert any(getattr(r, "failed", None) == 1 for r in caplog.records)


@pytest.mark.django_db
def test_the_command_prints_what_changed_and_fails_for_a_channel_graph_refuses(
    wa_binding: Any, tenant_b: Any, fake_graph: FakeGraph, capsys: Any
) -> None:
    wa_binding.waba_id = WABA_A
    wa_binding.save(update_fields=["waba_id"])
    fake_graph.templates_put(WABA_A, [ORDER_UPDATE, SURVEY], token=TOKEN_A)
    binding_create(tenant_b, NUMBER_B, token="EAAG-wrong", waba_id=WABA_B)

    with pytest.raises(SystemExit) as exited:
        call_command("whatsapp_templates_sync")

    out, err = capsys.readouterr()
    assert exited.value.code == 1
    assert f"{wa_binding.pk} " in out and "2 nuevas, 0 actualizadas, 0 ya no están en Meta" in out
    assert "No se pudieron leer las plantillas de WhatsApp (100)." in err


@pytest.mark.django_db
def test_admin_lists_the_templates_read_only_and_syncs_by_role(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    member: Any,
    outsider: Any,
    fake_graph: FakeGraph,
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    row = WhatsAppTemplate.objects.for_tenant(tenant_a).get()
    fake_graph.templates_put(WABA_A, [ORDER_UPDATE, SURVEY], token=TOKEN_A)
    url = "/admin/ai_agents/whatsapptemplate/"
    action = {"action": "sync", "_selected_action": [row.pk]}

    client.force_login(member.user)  # an agent: sees, may not sync
    listed = client.get(url).content.decode()
    assert "order_update" in listed
    # Meta's codes in words, in the list and its filters: never "APPROVED" or "utility"
    assert ">aprobada<" in listed and ">utilidad<" in listed
    assert ">APPROVED<" not in listed and ">utility<" not in listed
    detail = client.get(f"{url}{row.pk}/change/")
    assert detail.status_code == 200
    assert ">aprobada<" in detail.content.decode() and ">APPROVED<" not in detail.content.decode()
    assert ">aprobada<" in client.get(f"{url}?status=APPROVED").content.decode()
    client.post(url, action)
    assert [r[0] for r in _rows(tenant_a)] == ["order_update"]

    client.force_login(outsider.user)  # another tenant: nothing to see
    assert b"order_update" not in client.get(url).content
    assert client.get(f"{url}{row.pk}/change/").status_code == 404

    client.force_login(owner.user)
    client.post(url, action)
    assert [r[0] for r in _rows(tenant_a)] == ["encuesta", "order_update"]


@pytest.mark.django_db
def test_the_channels_list_syncs_a_channel_with_no_template_yet(
    client: Client, wa_binding: Any, tenant_a: Any, owner: Any, member: Any, fake_graph: FakeGraph
) -> None:
    wa_binding.waba_id = WABA_A
    wa_binding.save(update_fields=["waba_id"])
    fake_graph.templates_put(WABA_A, [ORDER_UPDATE], token=TOKEN_A)
    url = "/admin/ai_agents/channelbinding/"
    action = {"action": "templates_sync", "_selected_action": [str(wa_binding.pk)]}

    client.force_login(member.user)
    client.post(url, action)
    assert _rows(tenant_a) == []

    client.force_login(owner.user)
    page = client.post(url, action, follow=True)
    assert [row[0] for row in _rows(tenant_a)] == ["order_update"]
    assert "1 nuevas, 0 actualizadas, 0 ya no están en Meta" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_syncs_of_a_channel_at_once_both_store_without_an_error(
    wa_binding: Any, tenant_a: Any
) -> None:
    """The daily task and an admin's "Sincronizar" on the same channel at the same moment: the
    second waits for the first to commit and updates its rows (no duplicate-key error that
    would be a 500 or stop the daily task for every channel after it)."""
    import threading
    import time

    from django.db import connection, transaction

    from ai_agents.services import whatsapp_templates as service
    from erp.tenancy.scoping import tenant_scope
    from erp.testing import deadlines

    found = [t for t in (wire.template_parse(ORDER_UPDATE), wire.template_parse(SURVEY)) if t]
    first_stored = threading.Event()
    outcomes: list[Any] = []

    def first() -> None:
        try:
            with tenant_scope(tenant_a), transaction.atomic():
                outcomes.append(service._templates_store(wa_binding, found))
                first_stored.set()
                time.sleep(0.5)  # not committed yet while the second one stores
        finally:
            first_stored.set()
            connection.close()

    def second() -> None:
        try:
            first_stored.wait(deadlines.WAIT_S)
            with tenant_scope(tenant_a):
                outcomes.append(service._templates_store(wa_binding, found))
        except Exception as error:  # what the test looks at
            outcomes.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)

    assert [o.as_dict() if hasattr(o, "as_dict") else repr(o) for o in outcomes] == [
        {"created": 2, "updated": 0, "removed": 0},
        {"created": 0, "updated": 2, "removed": 0},
    ]
    with tenant_scope(tenant_a):
        assert [r[0] for r in _rows(tenant_a)] == ["encuesta", "order_update"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("es", "no se pudieron sincronizar las plantillas por un error inesperado"),
        ("en", "the templates could not be synced because of an unexpected error"),
    ],
)
def test_an_unexpected_sync_error_is_said_in_words_not_a_500(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    caplog: Any,
    language: str,
    words: str,
) -> None:
    """Meta answers a malformed list (not a Graph error): the admin's "Sincronizar" shows an
    error message in words, logs the failure and keeps the templates it had."""
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    row = WhatsAppTemplate.objects.for_tenant(tenant_a).get()
    fake_graph.templates_put(WABA_A, [{**SURVEY, "components": 5}], token=TOKEN_A)
    client.force_login(owner.user)
    client.cookies["django_language"] = language

    page = client.post(
        "/admin/ai_agents/whatsapptemplate/",
        {"action": "sync", "_selected_action": [row.pk]},
        follow=True,
    )

    assert page.status_code == 200
    assert words in page.content.decode()
    assert [r[0] for r in _rows(tenant_a)] == ["order_update"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "whatsapp.templates_sync_crashed"
    ]

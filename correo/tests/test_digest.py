# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""The daily digest (F0): classification in batches, storage without bodies, task and command."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from correo import digest as digest_module
from correo import tasks
from correo.mailbox import MailItem
from correo.models import Digest, ZohoConnection
from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox  # noqa: F401
from erp.llm.gateway import RetryPolicy
from erp.llm.models import UsageLog
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona


def mails(n: int) -> list[MailItem]:
    return [
        MailItem(
            message_id=f"m{i:02d}",
            folder_id="inbox",
            de=f"s{i}@x.test",
            asunto=f"Asunto {i}",
            fecha=f"2026-11-29T{i % 24:02d}:00:00+00:00",
            resumen=f"CUERPO-SECRETO-{i}",
        )
        for i in range(n)
    ]


def classify(ids: list[str], categories: dict[str, str]) -> Any:
    return {
        "items": [
            {"messageId": i, "categoria": categories.get(i, "normal"), "motivo": f"por {i}"}
            for i in ids
        ]
    }


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        digest_module, "RETRY", RetryPolicy(timeout_s=2, attempts=2, base_delay_s=0)
    )


def connect(persona: Persona) -> None:
    ZohoConnection.objects.for_tenant(persona.tenant).create(
        tenant=persona.tenant,
        owner=persona.user,
        refresh_token="1000.refresh",
        email=persona.user.email,
    )


def test_digest_classifies_in_batches_and_stores_no_bodies(
    owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_mailbox.items = mails(25)
    ids = [m.message_id for m in fake_mailbox.items]
    urgent = {"m01": "urgente", "m02": "urgente", "m22": "urgente"}
    noise = {f"m{i:02d}": "ruido" for i in range(10, 20)}
    fake_google.push(
        fake_google.reply_json(classify(ids[:20], {**urgent, **noise})),
        fake_google.reply_json(classify(ids[20:24], urgent)),  # m24 left out by the model
    )

    digest = digest_module.digest_build(user=owner.user, tenant=owner.tenant)

    assert len(fake_google.generate_requests) == 2  # 20 + 5
    schema = fake_google.generate_requests[0]["generationConfig"]["responseSchema"]
    assert schema["properties"]["items"]["items"]["properties"]["categoria"]["enum"] == [
        "urgente",
        "normal",
        "ruido",
    ]
    assert digest.resumen == "3 correos urgentes, 12 normales"
    assert digest.ruido_count == 10
    items = digest.payload["items"]
    assert [i["messageId"] for i in items[:3]] == ["m22", "m02", "m01"]  # urgent, newest first
    assert set(items[0]) == {
        "messageId",
        "folderId",
        "de",
        "asunto",
        "fecha",
        "categoria",
        "motivo",
    }
    assert next(i for i in items if i["messageId"] == "m24")["motivo"] == "sin clasificar"
    assert "CUERPO-SECRETO" not in json.dumps(Digest.objects.for_tenant(owner.tenant).get().payload)
    assert UsageLog.objects.for_tenant(owner.tenant).count() == 2


def test_broken_batch_counts_as_normal(
    owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_mailbox.items = mails(2)
    fake_google.push(fake_google.broken_json("no es json"))

    digest = digest_module.digest_build(user=owner.user, tenant=owner.tenant)

    assert digest.resumen == "0 correos urgentes, 2 normales"


def test_empty_inbox_gives_an_empty_digest(
    owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    digest = digest_module.digest_build(user=owner.user, tenant=owner.tenant)

    assert digest.resumen == "0 correos urgentes, 0 normales"
    assert fake_google.generate_requests == []


def test_the_next_ask_reads_the_new_digest(
    owner: Persona,
    owner_client: Any,
    fake_google: FakeGoogle,
    fake_mailbox: FakeMailbox,
    monkeypatch: pytest.MonkeyPatch,
):
    from correo import secretary

    monkeypatch.setattr(secretary, "RETRY", RetryPolicy(timeout_s=2, attempts=2, base_delay_s=0))
    fake_mailbox.items = mails(1)
    fake_google.push(
        fake_google.reply_json(classify(["m00"], {"m00": "urgente"})),
        fake_google.reply_json({"action": "responder", "answer": "Uno urgente."}),
    )
    digest_module.digest_build(user=owner.user, tenant=owner.tenant)

    owner_client.post("/api/correo/ask", {"question": "¿Qué hay?"}, format="json")

    prompt = fake_google.generate_requests[1]["contents"][0]["parts"][0]["text"]
    assert "1 correo urgente, 0 normales" in prompt and "Asunto 0" in prompt


def test_task_fans_out_to_connected_members_on_the_bulk_queue(
    owner: Persona, member: Persona, outsider: Persona, monkeypatch: pytest.MonkeyPatch
):
    connect(owner)
    connect(outsider)
    queued: list[int] = []
    monkeypatch.setattr(tasks.bulk_correo_digest_user, "delay", lambda uid: queued.append(uid))

    assert tasks.bulk_correo_digest_all() == 2

    assert sorted(queued) == sorted([owner.user.pk, outsider.user.pk])
    from erp.celery import app

    route = app.amqp.router.route({}, tasks.DIGEST_USER)
    assert route["queue"].name == "bulk"
    assert app.conf.beat_schedule["correo-digest-daily"]["task"] == tasks.DIGEST_ALL


def test_task_for_one_member(
    owner: Persona, settings: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    connect(owner)
    fake_mailbox.items = mails(1)
    fake_google.push(fake_google.reply_json(classify(["m00"], {})))

    assert (
        tasks.bulk_correo_digest_user.apply(args=[owner.user.pk]).get()
        == "0 correos urgentes, 1 normal"
    )


def test_command_for_one_user(owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox):
    connect(owner)
    fake_mailbox.items = mails(3)
    fake_google.push(fake_google.reply_json(classify(["m00", "m01", "m02"], {"m00": "ruido"})))
    out = StringIO()

    call_command("correo_digest", "--user", owner.user.email.upper(), stdout=out)

    lines = out.getvalue().strip().splitlines()
    assert lines[-1] == "1 informes"
    assert "0 correos urgentes, 2 normales, 1 de ruido" in lines[0]


def test_command_refuses_an_unconnected_user(owner: Persona):
    with pytest.raises(CommandError, match="sin conectar"):
        call_command("correo_digest", "--user", owner.user.email)


def test_admin_shows_only_own_digests(
    client: Any, owner: Persona, member: Persona, fake_mailbox: FakeMailbox
):
    from django.utils import timezone

    for persona, text in ((owner, "DEL-DUEÑO"), (member, "DEL-AGENTE")):
        Digest.objects.for_tenant(persona.tenant).create(
            tenant=persona.tenant, owner=persona.user, generated_at=timezone.now(), resumen=text
        )
    client.force_login(owner.user)

    html = client.get("/admin/correo/digest/").content.decode()

    assert "DEL-DUEÑO" in html and "DEL-AGENTE" not in html

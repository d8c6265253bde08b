"""Every label of every tenant admin's change form is translatable: Spanish by default,
English on request (no field left with Django's automatic English name, e.g. "Agent")."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils.functional import Promise

from ai_agents.models import ChannelBinding, HandoffSettings
from erp.tenancy.models import Tenant
from tests.admin_probe import tenant_admins, url
from tests.admin_rows import rows_for

pytestmark = pytest.mark.django_db

ADMINS = tenant_admins()


@pytest.mark.parametrize(("model", "model_admin"), ADMINS, ids=[m._meta.label for m, _ in ADMINS])
def test_every_change_form_label_is_translatable(
    model: Any, model_admin: Any, admin_client: Client, tenant_a: Tenant, owner: Any
) -> None:
    row = rows_for(tenant_a, owner.user)[model]
    page = admin_client.get(url(model, "change", row.pk))
    assert page.status_code == 200
    form = page.context["adminform"].form
    untranslated = [name for name, field in form.fields.items() if not _translatable(field.label)]
    assert untranslated == []


def _translatable(label: Any) -> bool:
    return label is None or isinstance(label, Promise)


@pytest.mark.parametrize(
    ("model", "field", "spanish", "english"),
    [
        (ChannelBinding, "agent", "Agente", "Agent"),
        (HandoffSettings, "tenant", "Empresa", "Company"),
    ],
)
def test_the_agent_and_company_labels_follow_the_language(
    admin_client: Client,
    tenant_a: Tenant,
    owner: Any,
    model: Any,
    field: str,
    spanish: str,
    english: str,
) -> None:
    row = rows_for(tenant_a, owner.user)[model]
    label = f'<label class="required" for="id_{field}">'
    es = admin_client.get(url(model, "change", row.pk)).content.decode()
    en = admin_client.get(url(model, "change", row.pk), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert f"{label}{spanish}:</label>" in es
    assert f"{label}{english}:</label>" in en

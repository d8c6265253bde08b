"""The customer's contact as a conversation meets it: read with the other statements of a
round trip (`contact_statement`), then settled: created when missing (one statement), its
given fields updated when they changed, untouched otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ai_agents.models import Contact
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope


def contact_statement(tenant_id: int, external_id: str) -> rows.Statement:
    return rows.select_statement(
        Contact, tenant_id=tenant_id, where="external_id = %s", params=[external_id]
    )


def contact_new(tenant: Any, data: Mapping[str, Any]) -> Contact:
    """The sender's contact, not saved yet, with its given fields."""
    return Contact(tenant=tenant, external_id=str(data["external_id"]), **_given(data))


def contact_insert_statement(contact: Contact) -> rows.Statement:
    """`contact` (unsaved) inserted unless the tenant has one with its external id already
    (a concurrent request's): the one INSERT of a contact, here and in `open_statements`."""
    sql, params = rows.insert_statement([contact])
    return f"{sql} ON CONFLICT (tenant_id, external_id) DO NOTHING", params


def _given(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("name", "email", "phone") if data.get(k)}


def contact_settle(tenant: Any, data: Mapping[str, Any], found: Contact | None) -> Contact:
    """`found` (the contact read), created when missing, its given fields updated if changed."""
    changes = _given(data)
    if found is None:
        contact, created = _contact_create(tenant, data)
    else:
        contact, created = found, False
    if not created and any(getattr(contact, k) != v for k, v in changes.items()):
        for key, value in changes.items():
            setattr(contact, key, value)
        contact.save(update_fields=[*changes, "updated_at"])
    return contact


def _contact_create(tenant: Any, data: Mapping[str, Any]) -> tuple[Contact, bool]:
    """A new contact in ONE statement (no transaction around it); one created meanwhile by
    another request is read instead (unique per tenant and external id)."""
    contact = contact_new(tenant, data)
    with tenant_scope(tenant):  # whoever calls (row security)
        (outcome,) = rows.run_together([contact_insert_statement(contact)])
    if outcome.rowcount == 1:
        rows.inserted([contact])
        return contact, True
    return Contact.objects.for_tenant(tenant).get_or_create(
        tenant=tenant, external_id=contact.external_id, defaults=_given(data)
    )


def contact_upsert(*, tenant: Any, data: Mapping[str, Any]) -> Contact:
    """The tenant's contact with this external id (created, or its given fields updated)."""
    (outcome,) = rows.run_together([contact_statement(tenant.pk, str(data["external_id"]))])
    found = rows.first(Contact, outcome)
    return contact_settle(tenant, data, found)

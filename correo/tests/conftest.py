"""correo fixtures: the fake Zoho and a connected mailbox for the `owner` persona."""

from __future__ import annotations

from typing import Any

import pytest

from correo.models import ZohoConnection
from correo.tests.factories import zoho_connection_create
from correo.tests.fake_zoho import FakeZoho, _fake_zoho_server, fake_zoho  # noqa: F401


@pytest.fixture
def zoho_connection(owner: Any, fake_zoho: FakeZoho) -> ZohoConnection:  # noqa: F811
    """`owner`'s mailbox, connected to the fake Zoho."""
    return zoho_connection_create(owner=owner.user, tenant=owner.tenant)

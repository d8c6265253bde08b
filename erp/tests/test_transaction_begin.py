"""A transaction's BEGIN travels with its first statement (erp/tenancy/postgres/base.py): one
round trip fewer per transaction, and still a transaction: what it writes is seen by no other
session before COMMIT, and nothing of it is kept after a rollback or a failed statement."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import psycopg
import pytest
from django.contrib.auth.models import Group
from django.db import IntegrityError, InternalError, ProgrammingError, connection, transaction

from erp.tenancy.scoping import tenant_scope

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def _round_trips() -> Iterator[list[int]]:
    """How many queries psycopg sends and waits the results of (BEGIN and COMMIT included):
    its one generator for that, counted where the cursor and the connection call it."""
    counted = [0]
    original = psycopg.generators.execute

    def execute(pgconn: Any) -> Any:
        counted[0] += 1
        return original(pgconn)

    with (
        mock.patch.object(psycopg._cursor_base, "execute", execute),
        mock.patch.object(psycopg.generators, "execute", execute),
    ):
        yield counted


def _seen_elsewhere(name: str) -> int:
    """The groups called `name` another session sees (committed rows only)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        row = other.execute("SELECT count(*) FROM auth_group WHERE name = %s", [name]).fetchone()
    return row[0] if row else 0


def test_a_transaction_of_one_statement_costs_the_statement_and_its_commit() -> None:
    connection.ensure_connection()
    name = f"g-{uuid.uuid4().hex[:8]}"
    with _round_trips() as counted, transaction.atomic():
        Group.objects.create(name=name)
    assert counted[0] == 2  # BEGIN + INSERT together, then COMMIT
    with _round_trips() as counted, transaction.atomic():
        pass
    assert counted[0] == 0  # nothing sent: nothing to begin or commit
    Group.objects.filter(name=name).delete()


def test_what_a_transaction_writes_is_seen_only_after_its_commit() -> None:
    name = f"g-{uuid.uuid4().hex[:8]}"
    with transaction.atomic():
        Group.objects.create(name=name)
        assert _seen_elsewhere(name) == 0  # not autocommitted
        assert Group.objects.filter(name=name).count() == 1
    assert _seen_elsewhere(name) == 1
    Group.objects.filter(name=name).delete()


def test_a_rollback_or_a_failed_statement_keeps_nothing_of_the_transaction(tenant_a: Any) -> None:
    name = f"g-{uuid.uuid4().hex[:8]}"
    with pytest.raises(RuntimeError), transaction.atomic():
        Group.objects.create(name=name)
        raise RuntimeError("undo")
    assert _seen_elsewhere(name) == 0

    Group.objects.create(name=name)
    with pytest.raises(IntegrityError), transaction.atomic():
        Group.objects.create(name=f"{name}-b")
        Group.objects.create(name=name)  # unique: fails, the first insert goes with it
    assert _seen_elsewhere(f"{name}-b") == 0

    # executemany cannot carry BEGIN: it goes first (with the scope's setting when there is
    # one), and the rows are still the transaction's.
    for scope in (tenant_scope(tenant_a), contextlib.nullcontext()):
        with scope, pytest.raises(RuntimeError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO auth_group (name) VALUES (%s)", [[f"{name}-c"], [f"{name}-d"]]
                )
            raise RuntimeError("undo")
        assert _seen_elsewhere(f"{name}-c") == 0
    Group.objects.filter(name__startswith=name).delete()


def test_the_transaction_begins_with_the_connections_access_mode() -> None:
    """BEGIN is psycopg's own: a read-only connection's transaction refuses a write."""
    connection.ensure_connection()
    connection.connection.read_only = True
    try:
        with pytest.raises(InternalError, match="read-only transaction"), transaction.atomic():
            Group.objects.create(name=f"g-{uuid.uuid4().hex[:8]}")
    finally:
        connection.connection.read_only = None


def test_autocommit_back_on_over_a_transaction_still_open_is_refused() -> None:
    """As psycopg refused it: a transaction Django believes ended (an error between a block's
    end and its COMMIT) must not swallow the statements that follow."""
    name = f"g-{uuid.uuid4().hex[:8]}"
    transaction.set_autocommit(False)
    try:
        Group.objects.create(name=name)
        with pytest.raises(ProgrammingError, match="transaction status INTRANS"):
            transaction.set_autocommit(True)
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)
    assert _seen_elsewhere(name) == 0
    Group.objects.create(name=name)  # autocommitted again
    assert _seen_elsewhere(name) == 1
    Group.objects.filter(name=name).delete()

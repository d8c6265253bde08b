"""The management commands print what scripts depend on, last."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from erp.tenancy.models import ApiKey, Membership, Tenant

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def test_tenant_create_is_idempotent_and_prints_id():
    first = run("tenant_create", "acme", "--name", "Acme SA", "--timezone", "Europe/Madrid")
    again = run("tenant_create", "acme", "--name", "Otro nombre")
    tenant = Tenant.objects.get(slug="acme")
    assert first == again == str(tenant.pk)
    assert tenant.name == "Acme SA" and tenant.timezone == "Europe/Madrid"
    assert Tenant.objects.count() == 1


@pytest.mark.parametrize(
    "bad", [["Bad Slug!", "--name", "x"], ["ok", "--name", "x", "--timezone", "Mars/Base"]]
)
def test_tenant_create_rejects_bad_input(bad):
    with pytest.raises(CommandError):
        call_command("tenant_create", *bad, stdout=StringIO())
    assert Tenant.objects.count() == 0


def test_apikey_create_prints_a_working_key_alone():
    run("tenant_create", "acme", "--name", "Acme")
    key = run("apikey_create", "acme", "--name", "erp-sync")
    assert key.startswith("erp_") and " " not in key
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {key}").get("/api/v1/tenant").status_code == 200
    assert ApiKey.objects.unscoped().get().name == "erp-sync"


def test_apikey_create_unknown_tenant_fails():
    with pytest.raises(CommandError):
        call_command("apikey_create", "nope", stdout=StringIO())


def test_user_create_prints_id_and_makes_staff_member(client):
    run("tenant_create", "acme", "--name", "Acme")
    user_id = run(
        "user_create",
        "Ana@Acme.test",
        "--tenant",
        "acme",
        "--role",
        "admin",
        "--password",
        "s3cret-pass",
    )
    user = get_user_model().objects.get(pk=int(user_id))
    assert user.is_staff and not user.is_superuser and user.email == "ana@acme.test"
    assert Membership.objects.unscoped().get(user=user).role == "admin"
    assert client.login(username="ana@acme.test", password="s3cret-pass")
    again = run(
        "user_create",
        "ana@acme.test",
        "--tenant",
        "acme",
        "--role",
        "agent",
        "--password",
        "s3cret-pass",
    )
    assert again == user_id
    assert Membership.objects.unscoped().get(user=user).role == "agent"


def test_demo_load_is_idempotent_and_login_opens_admin(client):
    first = run("demo_load")
    second = run("demo_load")
    assert first == second == "demo@example.com / demo1234"
    assert Tenant.objects.filter(slug="demo").count() == 1
    assert client.login(username="demo@example.com", password="demo1234")
    assert client.get("/admin/").status_code == 200


def test_demo_load_keeps_a_password_changed_by_its_owner(client):
    run("demo_load")
    user = get_user_model().objects.get(username="demo@example.com")
    user.set_password("una-clave-propia-9")
    user.save()

    again = run("demo_load")  # what every `make run` does

    assert again == "demo@example.com / (contraseña cambiada; se conserva)"
    assert client.login(username="demo@example.com", password="una-clave-propia-9")
    assert not client.login(username="demo@example.com", password="demo1234")
    assert Membership.objects.unscoped().get(user=user).role == "owner"

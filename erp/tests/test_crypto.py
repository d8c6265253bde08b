from io import StringIO

import pytest
from django.core.exceptions import FieldError
from django.core.management import CommandError, call_command
from django.db import connection

from erp.crypto import PREFIX, DecryptionError
from erp.tenancy.scoping import all_tenants
from erp.testing.testapp.models import SecretHolder

OLD_KEY = "old-key-0123456789abcdefghijklmnopqrstuv"
NEW_KEY = "new-key-zyxwvutsrqponmlkjihgfedcba9876543"
PLAINTEXT = "EAAG-whatsapp-token-1234567890"


def _stored(pk: int) -> str:
    with all_tenants(), connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM erp_testapp_secretholder WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def _reload(pk: int) -> SecretHolder:
    with all_tenants():
        return SecretHolder._base_manager.get(pk=pk)


@pytest.fixture
def old_key(settings):
    settings.FIELD_ENCRYPTION_KEYS = [OLD_KEY]
    return settings


def test_value_is_encrypted_in_the_database_and_reads_back(tenant_a, old_key):
    holder = SecretHolder.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, name="wa", secret=PLAINTEXT
    )

    stored = _stored(holder.pk)
    assert stored.startswith(PREFIX)
    assert PLAINTEXT not in stored
    assert _reload(holder.pk).secret == PLAINTEXT


def test_empty_value_stays_empty_and_equality_lookups_are_refused(tenant_a, old_key):
    holder = SecretHolder.objects.for_tenant(tenant_a).create(tenant=tenant_a, name="none")

    assert _stored(holder.pk) == ""
    with pytest.raises(FieldError):
        SecretHolder.objects.for_tenant(tenant_a).filter(secret=PLAINTEXT).count()


def test_wrong_key_raises_decryption_error(tenant_a, old_key, settings):
    holder = SecretHolder.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, name="wa", secret=PLAINTEXT
    )
    settings.FIELD_ENCRYPTION_KEYS = ["some-other-key"]

    with pytest.raises(DecryptionError):
        _reload(holder.pk)


def test_rotation_re_encrypts_every_row_with_the_newest_key(tenant_a, tenant_b, old_key, settings):
    a = SecretHolder.objects.for_tenant(tenant_a).create(tenant=tenant_a, name="a", secret="A1")
    b = SecretHolder.objects.for_tenant(tenant_b).create(tenant=tenant_b, name="b", secret="B1")
    empty = SecretHolder.objects.for_tenant(tenant_b).create(tenant=tenant_b, name="e")
    before = _stored(a.pk)

    # Prepend a new key: old rows stay readable, new writes use the new key.
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY, OLD_KEY]
    assert _reload(a.pk).secret == "A1"

    out = StringIO()
    call_command("secrets_rotate", "--batch-size", "1", stdout=out)

    assert "erp_testapp.SecretHolder.secret: 2 rotated, 0 failed" in out.getvalue()
    assert _stored(a.pk) != before
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY]  # old key dropped
    assert (_reload(a.pk).secret, _reload(b.pk).secret) == ("A1", "B1")
    assert _stored(empty.pk) == ""
    assert (_reload(a.pk).name, _reload(a.pk).tenant_id) == ("a", tenant_a.pk)


def test_rotation_reports_rows_no_key_decrypts_and_fails(tenant_a, old_key, settings):
    good = SecretHolder.objects.for_tenant(tenant_a).create(tenant=tenant_a, name="g", secret="G")
    settings.FIELD_ENCRYPTION_KEYS = ["lost-key"]
    lost = SecretHolder.objects.for_tenant(tenant_a).create(tenant=tenant_a, name="l", secret="L")
    lost_before = _stored(lost.pk)
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY, OLD_KEY]
    out = StringIO()

    with pytest.raises(CommandError):
        call_command("secrets_rotate", stdout=out)

    assert "1 rotated, 1 failed" in out.getvalue()
    assert _stored(lost.pk) == lost_before  # left untouched
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY]
    assert _reload(good.pk).secret == "G"


def test_secret_key_fallbacks_decrypt_when_no_dedicated_keys(tenant_a, settings):
    settings.FIELD_ENCRYPTION_KEYS = []
    settings.SECRET_KEY = "first-secret-key-for-django-0123456789"
    holder = SecretHolder.objects.for_tenant(tenant_a).create(tenant=tenant_a, name="s", secret="S")

    settings.SECRET_KEY = "second-secret-key-for-django-987654321"
    settings.SECRET_KEY_FALLBACKS = ["first-secret-key-for-django-0123456789"]

    assert _reload(holder.pk).secret == "S"

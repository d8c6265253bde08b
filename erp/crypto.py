"""Secrets at rest: an encrypted model field with key rotation.

Keys come from the FIELD_ENCRYPTION_KEYS setting, newest first; any string works (it is
stretched with SHA-256 into a Fernet key). With no keys configured, the embedded run derives
one from SECRET_KEY. Values are encrypted with the newest key and decrypted with any listed key,
so rotation is: prepend a new key, run `manage.py secrets_rotate`, then drop the old key.

Moving off the SECRET_KEY fallback works the same way: set
`FIELD_ENCRYPTION_KEYS=<new key>,<current SECRET_KEY>`, run `secrets_rotate`, drop the second.
Equality lookups are refused (ciphertexts are randomised); only `isnull` works.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models, transaction
from django.db.models import Value
from django.db.models.functions import Cast

from erp.tenancy.scoping import all_tenants

PREFIX = "enc1:"


class DecryptionError(RuntimeError):
    """A stored secret could not be decrypted with any configured key."""


def _fernet_key(secret: str) -> bytes:
    digest = hashlib.sha256(b"erp-field-encryption:" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest)


@lru_cache(maxsize=4)
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS (or SECRET_KEY) must be set")
    return MultiFernet([Fernet(_fernet_key(k)) for k in keys])


def _keys() -> tuple[str, ...]:
    configured = settings.FIELD_ENCRYPTION_KEYS
    if isinstance(configured, str):  # a single key set by hand, not a list of its characters
        configured = [configured]
    keys = tuple(k for k in configured if k)
    if keys:
        return keys
    # No dedicated keys: follow Django's own SECRET_KEY rotation (SECRET_KEY_FALLBACKS).
    fallbacks = getattr(settings, "SECRET_KEY_FALLBACKS", [])
    return tuple(k for k in (settings.SECRET_KEY, *fallbacks) if k)


def cipher() -> MultiFernet:
    return _cipher(_keys())


def encrypt(plaintext: str) -> str:
    return PREFIX + cipher().encrypt(plaintext.encode()).decode()


def decrypt(stored: str) -> str:
    if not stored.startswith(PREFIX):
        raise DecryptionError("value is not an encrypted secret")
    try:
        return cipher().decrypt(stored[len(PREFIX) :].encode()).decode()
    except InvalidToken:
        raise DecryptionError("no configured key decrypts this secret") from None


def rotate(stored: str) -> str:
    """Re-encrypt a stored value with the newest key (decrypting with any configured key)."""
    if not stored.startswith(PREFIX):
        raise DecryptionError("value is not an encrypted secret")
    try:
        return PREFIX + cipher().rotate(stored[len(PREFIX) :].encode()).decode()
    except InvalidToken:
        raise DecryptionError("no configured key decrypts this secret") from None


class EncryptedTextField(models.TextField):
    """Text stored encrypted; Python code sees the plaintext. Empty string stays empty."""

    description = "Encrypted text"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(str(value))

    def get_lookup(self, lookup_name: str) -> Any:
        # Ciphertexts are randomised: equality lookups could never match, so refuse them.
        if lookup_name not in {"isnull"}:
            return None
        return super().get_lookup(lookup_name)


# --- Rotation (maintenance) --------------------------------------------------------------------
@dataclass(frozen=True)
class RotationResult:
    label: str  # "app_label.Model.field"
    rotated: int
    failed: int  # rows no configured key decrypts: left untouched


def encrypted_fields() -> list[tuple[type[models.Model], EncryptedTextField]]:
    """Every concrete EncryptedTextField of every installed model."""
    found = []
    for model in apps.get_models():
        if model._meta.proxy or not model._meta.managed:
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, EncryptedTextField):
                found.append((model, field))
    return found


def secrets_rotate(*, batch_size: int = 500) -> list[RotationResult]:
    """Re-encrypt every non-empty encrypted value with the newest key, one column at a time.

    Reads the stored ciphertext as plain text (no decryption on load, so one bad row does not
    stop the run) and writes the rotated ciphertext back as is (no second encryption). Uses the
    plain base manager: this is maintenance code that crosses tenants on purpose.
    """
    with all_tenants():  # row-level security's explicit bypass: every tenant's rows
        return [_rotate_column(model, field, batch_size) for model, field in encrypted_fields()]


def _rotate_column(
    model: type[models.Model], field: models.Field[Any, Any], batch_size: int
) -> RotationResult:
    queryset = (
        model._base_manager.filter(**{f"{field.name}__isnull": False})
        .annotate(_stored=Cast(field.name, models.TextField()))
        .values_list("pk", "_stored")
        .order_by("pk")
    )
    rotated = failed = 0
    batch: list[models.Model] = []
    for pk, stored in queryset.iterator(chunk_size=batch_size):
        if not stored:
            continue
        try:
            new_value = rotate(stored)
        except DecryptionError:
            failed += 1
            continue
        row = model(pk=pk)
        # An expression with a plain TextField output is written verbatim by bulk_update.
        setattr(row, field.attname, Value(new_value, output_field=models.TextField()))
        batch.append(row)
        if len(batch) >= batch_size:
            rotated += _write(model, field, batch)
    rotated += _write(model, field, batch)
    label = f"{model._meta.label}.{field.name}"
    return RotationResult(label=label, rotated=rotated, failed=failed)


def _write(model: type[models.Model], field: models.Field[Any, Any], batch: list[Any]) -> int:
    if not batch:
        return 0
    with transaction.atomic():
        model._base_manager.bulk_update(batch, [field.name])
    count = len(batch)
    batch.clear()
    return count

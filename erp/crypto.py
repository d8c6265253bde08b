"""Secrets at rest: an encrypted model field with key rotation.

Keys come from the FIELD_ENCRYPTION_KEYS setting, newest first; any string works (it is
stretched with SHA-256 into a Fernet key). With no keys configured, the embedded run derives
one from SECRET_KEY. Values are encrypted with the newest key and decrypted with any listed key,
so rotation is: prepend a new key, run `manage.py secrets_rotate`, then drop the old key.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

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


def cipher() -> MultiFernet:
    keys = tuple(settings.FIELD_ENCRYPTION_KEYS) or (settings.SECRET_KEY,)
    return _cipher(keys)


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
    """Re-encrypt with the newest key."""
    return PREFIX + cipher().rotate(stored[len(PREFIX) :].encode()).decode()


class EncryptedTextField(models.TextField):  # type: ignore[type-arg]
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

"""Writes on tenants, members and API keys."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from erp.tenancy.models import ApiKey, Membership, Tenant

KEY_PREFIX = "erp"
_LAST_USED_GRANULARITY = timedelta(minutes=1)
# Compared against when a prefix is unknown, so both paths hash and compare.
_DUMMY_HASH = hashlib.sha256(b"no-such-key").hexdigest()


def tenant_create(
    *, slug: str, name: str, timezone_name: str | None = None, language: str | None = None
) -> tuple[Tenant, bool]:
    """Create the tenant, or return the existing one with that slug (idempotent)."""
    defaults: dict[str, object] = {"name": name}
    if timezone_name:
        defaults["timezone"] = timezone_name
    if language:
        defaults["language"] = language
    tenant = Tenant(slug=slug, **defaults)
    tenant.full_clean(validate_unique=False)
    return Tenant.objects.get_or_create(slug=slug, defaults=defaults)


@transaction.atomic
def user_create(*, email: str, tenant: Tenant, role: str, password: str) -> AbstractBaseUser:
    """A staff user (admin access) with a membership in `tenant`; updates role if it exists."""
    User = get_user_model()
    email = User.objects.normalize_email(email).lower()
    user = User.objects.filter(username=email).first()
    if user is None:
        user = User.objects.create_user(username=email, email=email, password=password)
    else:
        user.set_password(password)
    user.is_staff = True
    user.save()
    Membership.objects.for_tenant(tenant).update_or_create(
        tenant=tenant, user=user, defaults={"role": role}
    )
    return user


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedApiKey:
    api_key: ApiKey
    key: str  # shown once, never stored


def apikey_create(
    *, tenant: Tenant, name: str, created_by: AbstractBaseUser | None = None
) -> CreatedApiKey:
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.for_tenant(tenant).create(
        tenant=tenant, name=name, prefix=prefix, key_hash=_hash(key), created_by=created_by
    )
    return CreatedApiKey(api_key=api_key, key=key)


def apikey_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def apikey_authenticate(*, key: str) -> ApiKey | None:
    """The active key matching `key` (constant-time comparison), or None."""
    parts = key.split("_", 2)
    prefix = parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else ""
    candidate = (
        ApiKey.objects.unscoped().select_related("tenant").filter(prefix=prefix).first()
        if prefix
        else None
    )
    expected = candidate.key_hash if candidate else _DUMMY_HASH
    matches = hmac.compare_digest(_hash(key), expected)
    if candidate is None or not matches or candidate.revoked_at is not None:
        return None
    if not candidate.tenant.is_active:
        return None
    now = timezone.now()
    if candidate.last_used_at is None or now - candidate.last_used_at > _LAST_USED_GRANULARITY:
        ApiKey.objects.unscoped().filter(pk=candidate.pk).update(last_used_at=now)
        candidate.last_used_at = now
    return candidate

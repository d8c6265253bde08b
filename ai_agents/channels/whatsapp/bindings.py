"""The WhatsApp binding of a business number, cached: every webhook POST starts by finding it.

The cache is Django's (Redis, shared by every web process), one key per number, holding the
binding's, its agent's and its tenant's field values (or "no binding": unknown numbers are
POSTed too), never its access token (deferred: the webhook sends nothing; a later read loads
it). Saving or deleting a ChannelBinding forgets its number (the old one too, when the number
changed), and so does saving its agent, at once and again when the transaction commits, so the
next webhook, in any process, reads the new row: a binding moved to another agent or deactivated
is obeyed by the very next POST. `TTL_S` is only the safety net for a write that sends no signal
(a queryset `update()`, raw SQL). Redis down: the binding is read from the database, as without
the cache.

On top of it, each process keeps its own copy (`_local`, `erp.local_mirror`): the webhook POST
then asks Redis nothing for its binding. A forget drops the copy in every process through
Redis publish/subscribe; a process that is not listening keeps no copy.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Model
from django.db.models.signals import post_delete, post_save, pre_save

from ai_agents.models import Agent, ChannelBinding
from erp.local_mirror import MISSING, LocalMirror
from erp.tenancy.models import Tenant

logger = logging.getLogger(__name__)

TTL_S = 300
LOCAL_TTL_S = 60
_local = LocalMirror("wa-binding:forget", ttl_s=LOCAL_TTL_S)
_NONE = "none"  # cached "no binding for this number"
# The numbers this process cached (tests forget them between tests: `numbers_forget`).
_cached: set[str] = set()


def binding_key(phone_number_id: str) -> str:
    """The number's key, with the shape of the cached rows (`_shape`): a release whose models
    have other fields reads its own keys, never another release's rows."""
    digest = hashlib.sha256(phone_number_id.encode("utf-8", "replace")).hexdigest()[:32]
    shape = _shape(_names(ChannelBinding), _names(Agent), _names(Tenant))
    return f"wa-binding:v2:{shape}:{digest}"


# Cached as the three rows' field values, not as pickled models: rebuilding them with
# `from_db` costs a tenth of unpickling (~0.35 ms of every webhook POST's CPU).
_Rows = tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]


@functools.cache
def _names(model: type[Model]) -> tuple[str, ...]:
    return tuple(f.attname for f in model._meta.concrete_fields if f.attname != "access_token")


@functools.cache
def _shape(*names: tuple[str, ...]) -> str:
    """The field names the rows are cached by, as a digest: during a rolling deploy that adds
    or drops a field, old and new web processes share the cache, and values read by position
    under the other release's names would land in the wrong fields (or fail the POST)."""
    return hashlib.sha256(repr(names).encode()).hexdigest()[:8]


def _rows_of(binding: ChannelBinding) -> _Rows:
    agent = binding.agent
    return (
        tuple(getattr(binding, name) for name in _names(ChannelBinding)),
        tuple(getattr(agent, name) for name in _names(Agent)),
        tuple(getattr(agent.tenant, name) for name in _names(Tenant)),
    )


def _from_rows(rows: _Rows) -> ChannelBinding:
    binding_values, agent_values, tenant_values = rows
    binding = ChannelBinding.from_db("default", _names(ChannelBinding), binding_values)
    agent = Agent.from_db("default", _names(Agent), agent_values)
    tenant = Tenant.from_db("default", _names(Tenant), tenant_values)
    Agent.tenant.field.set_cached_value(agent, tenant)
    ChannelBinding.agent.field.set_cached_value(binding, agent)
    return binding


def _from_database(phone_number_id: str) -> ChannelBinding | None:
    """Platform-wide unique, the only way to a tenant before any is known: `unscoped`."""
    return (
        ChannelBinding.objects.unscoped()
        .filter(type=ChannelBinding.Type.WHATSAPP, phone_number_id=phone_number_id)
        .select_related("agent__tenant")
        .defer("access_token")
        .first()
    )


# `binding_for_number(cached=)` when the caller has not read the cache for it, and when the
# caller's own read failed (Redis down: the database answers, nothing is cached).
UNREAD: Any = object()
CACHE_DOWN: Any = object()


def local_has(phone_number_id: str) -> bool:
    """Whether this process holds the number's binding (a lookup asks Redis nothing)."""
    return _local.get(binding_key(phone_number_id)) is not MISSING


def local_copy(phone_number_id: str) -> tuple[str, Any]:
    """The number's key and this process's copy of its binding (MISSING: none), for
    `binding_for_number(local=)`: a webhook POST computes the one and looks up the other
    once per number."""
    key = binding_key(phone_number_id)
    return key, _local.get(key)


def local_generation() -> int:
    """For `binding_for_number(since=)`: taken before the caller's own cache read."""
    return _local.generation()


def binding_for_number(
    phone_number_id: str,
    *,
    active: bool = True,
    cached: Any = UNREAD,
    since: int | None = None,
    local: tuple[str, Any] | None = None,
) -> ChannelBinding | None:
    """The WhatsApp binding of a business number. Inactive bindings take no new messages
    (`active=True`: None) but still get the statuses of what they sent. `cached`: what the
    caller read from the cache under `binding_key(phone_number_id)` in a read of its own
    (None: nothing there; CACHE_DOWN: the read failed), to save this lookup its round trip;
    `since`: `local_generation()` taken before that read (without it, what the caller read
    is not kept, here or in Redis: a forget may have come after it). This process's copy
    comes first: `local`, what `local_copy` gave the caller (taken after `since`, as its
    cache read), or looked up here (again when `local` had none: an earlier lookup of the
    POST may have kept one since)."""
    key, value = local if local is not None else (binding_key(phone_number_id), MISSING)
    if value is MISSING:
        value = _local.get(key)
    if value is not MISSING:
        return _binding_of(value, active)
    if cached is UNREAD:  # the read is this function's own: from now on
        since = _local.generation()
    elif since is None:  # the caller's read, at a generation not given: kept nowhere
        since = -1
    if cached is CACHE_DOWN:
        cached, key = None, ""
    elif cached is UNREAD:
        try:
            cached = cache.get(key)
        except Exception as exc:  # Redis down: the database answers
            logger.warning(
                "whatsapp.binding_cache_unavailable", extra={"error": type(exc).__name__}
            )
            cached, key = None, ""
    if cached is None:
        binding = _from_database(phone_number_id)
        cached = _NONE if binding is None else _rows_of(binding)
        # Not written to Redis when this number was forgotten since `since` (here, or from
        # another process while this one listens): the row read may be the one a commit
        # replaced after the read and forgot before this write, which would then outlive the
        # forget. Another number's forget does not stop it.
        if key and not _local.forgotten_since(since, key):
            _remember(key, phone_number_id, cached)
    if key:  # read from Redis, or from the database and stored there
        _local.put(key, cached, since)
    return _binding_of(cached, active)


def _binding_of(value: Any, active: bool) -> ChannelBinding | None:
    binding = None if value == _NONE else _from_rows(value)
    if binding is not None and active and not binding.is_active:
        return None
    return binding


def _remember(key: str, phone_number_id: str, value: Any) -> None:
    try:
        cache.set(key, value, TTL_S)
        _cached.add(phone_number_id)
    except Exception as exc:
        logger.warning("whatsapp.binding_cache_unavailable", extra={"error": type(exc).__name__})


def numbers_forget(numbers: set[str] | list[str]) -> None:
    """Drops these numbers' cached bindings (never raises: the TTL ends a stale one)."""
    keys = [binding_key(number) for number in numbers if number]
    if not keys:
        return
    try:
        cache.delete_many(keys)
    except Exception as exc:
        logger.warning("whatsapp.binding_cache_unavailable", extra={"error": type(exc).__name__})
    _local.forget(keys)  # after Redis: a process reading again finds no old copy there


def cached_numbers_forget() -> None:
    """Everything this process cached (tests: a rolled-back binding must not outlive them)."""
    numbers_forget(sorted(_cached))
    _cached.clear()
    _local.clear()


def _numbers_of(instance: ChannelBinding) -> set[str]:
    return {instance.phone_number_id, getattr(instance, "_wa_number_before", "")} - {""}


def _before_save(sender: Any, instance: ChannelBinding, **kwargs: Any) -> None:
    """Notes the number the row had, so a changed number forgets the old one too."""
    if kwargs.get("raw") or instance._state.adding:
        return
    instance._wa_number_before = (  # type: ignore[attr-defined]  # our note on the instance
        ChannelBinding.objects.unscoped()
        .filter(pk=instance.pk)
        .values_list("phone_number_id", flat=True)
        .first()
        or ""
    )


def _changed(sender: Any, instance: ChannelBinding, **kwargs: Any) -> None:
    _forget_now_and_after_commit(_numbers_of(instance))


def _agent_changed(sender: Any, instance: Agent, **kwargs: Any) -> None:
    """The cached binding carries its agent: an agent saved is read again."""
    if kwargs.get("raw") or kwargs.get("created"):
        return
    numbers = ChannelBinding.objects.unscoped().filter(
        agent_id=instance.pk, type=ChannelBinding.Type.WHATSAPP
    )
    _forget_now_and_after_commit(set(numbers.values_list("phone_number_id", flat=True)) - {""})


def _forget_now_and_after_commit(numbers: set[str]) -> None:
    if not numbers:
        return
    numbers_forget(numbers)  # at once (this transaction's own reads)
    # and after the commit: a webhook that read the old row meanwhile may have cached it
    transaction.on_commit(lambda: numbers_forget(numbers), robust=True)


pre_save.connect(_before_save, sender=ChannelBinding, dispatch_uid="wa_binding_before_save")
post_save.connect(_changed, sender=ChannelBinding, dispatch_uid="wa_binding_saved")
post_delete.connect(_changed, sender=ChannelBinding, dispatch_uid="wa_binding_deleted")
post_save.connect(_agent_changed, sender=Agent, dispatch_uid="wa_binding_agent_saved")

"""The tenant's monthly budget: month-to-date spend, the 80 % / 100 % notices, and what a
model call does once it is spent.

Spend is every ledger row of the tenant's calendar month (its timezone): model calls,
transcription and channel messages. The gateway asks before each model call, so the sum is
cached in Redis for `SPEND_CACHE_SECONDS` and grows by each costed row of a tenant with a
budget as it is written (`spend_add`; a channel charge only when its row is new, not a
retry's duplicate). Rows deferred to the end of a reply land a moment later: the next
check may miss them, the one after that sees them. At 100 % the tenant's
`budget_action` applies: "cheaper_model" swaps the request's model, "handoff_only" raises
`BudgetExhausted` (the agent escalates instead of answering). The owners are e-mailed once
per month and threshold; `BudgetNotice`'s unique constraint makes "once" hold across workers.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import zoneinfo
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.mail import send_mail
from django.db.models import Sum
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from erp.db import connection_release
from erp.llm.errors import BudgetExhausted
from erp.llm.models import BudgetNotice, UsageLog
from erp.llm.types import LlmRequest
from erp.tenancy.models import BudgetAction, Membership, Tenant
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

SPEND_CACHE_SECONDS = 300
THRESHOLDS = (80, 100)


@dataclass(frozen=True)
class BudgetState:
    budget_usd: Decimal
    spent_usd: Decimal
    month: str  # YYYY-MM, the tenant's calendar month

    @property
    def percent(self) -> Decimal:
        if self.budget_usd <= 0:
            return Decimal(100)
        return self.spent_usd * 100 / self.budget_usd

    @property
    def exhausted(self) -> bool:
        return self.percent >= 100


MICRO = Decimal(1_000_000)


def _month_start(tenant: Tenant, now: dt.datetime | None = None) -> dt.datetime:
    local = (now or timezone.now()).astimezone(zoneinfo.ZoneInfo(tenant.timezone))
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _key(kind: str, tenant: Tenant, month: str) -> str:
    # The creation time too: a tenant id that comes back (a restored database, tests) never
    # reads the cached figures of the tenant that had it before.
    return f"budget-{kind}:{tenant.pk}:{tenant.created_at:%Y%m%d%H%M%S%f}:{month}"


def month_spend(*, tenant: Tenant, now: dt.datetime | None = None) -> Decimal:
    """The tenant's spend since the start of its calendar month (cached)."""
    start = _month_start(tenant, now)
    key = _key("spend", tenant, f"{start:%Y-%m}")
    try:
        cached = cache.get(key)
    except Exception as exc:  # Redis down: the sum from the database is still right
        logger.warning("budget.cache_unavailable", extra={"error": type(exc).__name__})
        cached = None
    if cached is not None:
        return Decimal(int(cached)) / MICRO
    total = (
        UsageLog.objects.for_tenant(tenant)
        .filter(created_at__gte=start)
        .aggregate(total=Sum("cost_usd"))["total"]
    ) or Decimal("0")
    try:  # whole micro-dollars: an integer the cache adds to atomically (`spend_add`)
        cache.set(key, int((total * MICRO).to_integral_value()), SPEND_CACHE_SECONDS)
    except Exception as exc:
        logger.warning("budget.cache_unavailable", extra={"error": type(exc).__name__})
    return total


def spend_add(*, tenant: Tenant, cost_usd: Decimal) -> None:
    """A costed row was written: the cached month spend grows by its cost, so a busy tenant's
    next check reads the cache instead of summing the month again (only tenants with a budget;
    no cached figure: the next check sums)."""
    if tenant.monthly_budget_usd is None:
        return
    try:
        cache.incr(
            _key("spend", tenant, f"{_month_start(tenant):%Y-%m}"),
            int((Decimal(cost_usd) * MICRO).to_integral_value()),
        )
    except ValueError:
        pass  # not cached now
    except Exception as exc:
        logger.warning("budget.cache_unavailable", extra={"error": type(exc).__name__})


def budget_request(request: LlmRequest, *, tenant: Tenant, provider: str) -> LlmRequest:
    """The request a model call makes under the tenant's budget: unchanged below 100 %, with
    the cheaper model at 100 % ("cheaper_model"), or `BudgetExhausted` ("handoff_only"). The
    offline provider costs nothing and is never held back."""
    if provider == "offline" or tenant.monthly_budget_usd is None:
        return request
    state = budget_check(tenant=tenant)
    if state is None or not state.exhausted:
        return request
    if tenant.budget_action == BudgetAction.CHEAPER_MODEL and tenant.budget_cheaper_model:
        return dataclasses.replace(request, model=tenant.budget_cheaper_model)
    raise BudgetExhausted(
        "presupuesto mensual agotado", provider=provider, model=request.model or ""
    )


def budget_check(*, tenant: Tenant) -> BudgetState | None:
    """The tenant's budget state (None without a budget); notifies the owners when the spend
    first reaches 80 % or 100 % this month."""
    if tenant.monthly_budget_usd is None:
        return None
    start = _month_start(tenant)
    state = BudgetState(
        budget_usd=tenant.monthly_budget_usd,
        spent_usd=month_spend(tenant=tenant),
        month=f"{start:%Y-%m}",
    )
    reached = [threshold for threshold in THRESHOLDS if state.percent >= threshold]
    if reached:
        budget_notify(tenant=tenant, state=state, threshold=reached[-1])
    return state


def budget_notify(*, tenant: Tenant, state: BudgetState, threshold: int) -> bool:
    """Records (and e-mails the owners) the notice for `threshold` unless this month has it;
    the lower thresholds passed on the way are marked done without a second e-mail."""
    done_key = _key("notice", tenant, f"{state.month}:{threshold}")
    try:
        if cache.get(done_key):
            return False
    except Exception:
        logger.warning("budget.cache_unavailable", extra={"tenant_id": tenant.pk})
    recipients = owner_emails(tenant)
    with tenant_scope(tenant):
        for passed in (level for level in THRESHOLDS if level < threshold):
            _notice_record(tenant, state, passed, recipients=[])  # marked, not mailed
        created = _notice_record(tenant, state, threshold, recipients=recipients)
    try:
        cache.set(done_key, 1, 40 * 24 * 3600)
    except Exception:
        logger.warning("budget.cache_unavailable", extra={"tenant_id": tenant.pk})
    if created:
        _notice_mail(tenant=tenant, state=state, threshold=threshold, recipients=recipients)
    return created


def _notice_record(
    tenant: Tenant, state: BudgetState, threshold: int, *, recipients: list[str]
) -> bool:
    """True when this call wrote the month's notice for `threshold` (get_or_create retries
    the read when another worker inserted it first)."""
    _notice, created = BudgetNotice.objects.get_or_create(
        tenant=tenant,
        month=state.month,
        threshold=threshold,
        defaults={
            "spent_usd": state.spent_usd,
            "budget_usd": state.budget_usd,
            "recipients": recipients,
        },
    )
    return created


def owner_emails(tenant: Tenant) -> list[str]:
    user_ids = Membership.objects.for_tenant(tenant).filter(role=Membership.Role.OWNER)
    emails = (
        get_user_model()
        .objects.filter(pk__in=list(user_ids.values_list("user_id", flat=True)), is_active=True)
        .exclude(email="")
        .order_by("email")
        .values_list("email", flat=True)
    )
    return list(dict.fromkeys(emails))


def _notice_mail(
    *, tenant: Tenant, state: BudgetState, threshold: int, recipients: list[str]
) -> None:
    logger.warning(
        "budget.threshold_reached",
        extra={"tenant_id": tenant.pk, "threshold": threshold, "month": state.month},
    )
    if not recipients:
        return
    connection_release()  # the mail server is not waited on with a pooled connection held
    with translation.override(tenant.language):
        if threshold >= 100:
            subject = _("Presupuesto de IA agotado: %(name)s") % {"name": tenant.name}
            action = (
                _("Las respuestas pasan a una persona hasta el mes que viene.")
                if tenant.budget_action == BudgetAction.HANDOFF_ONLY
                else _("Los agentes usan ahora el modelo %(model)s.")
                % {"model": tenant.budget_cheaper_model}
            )
        else:
            subject = _("Presupuesto de IA al %(pct)s %%: %(name)s") % {
                "pct": threshold,
                "name": tenant.name,
            }
            action = _("Al agotarse el presupuesto se aplicará la acción configurada.")
        body = _("Gastado este mes (%(month)s): %(spent)s USD de %(budget)s USD.") % {
            "month": state.month,
            "spent": f"{state.spent_usd:.2f}",
            "budget": f"{state.budget_usd:.2f}",
        }
        text = f"{body}\n{action}\n"
    try:
        send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, recipients)
    except Exception as exc:  # the notice row stays: the admin shows it
        logger.warning(
            "budget.mail_failed", extra={"tenant_id": tenant.pk, "error": type(exc).__name__}
        )

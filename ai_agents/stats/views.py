"""Statistics page for the tenant's staff (Django session; a membership in the tenant).

`/stats/?tenant=&from=&to=&agent=&channel=`   figures, charts and unanswered questions
`/stats/stats.csv?...`, `/stats/conversations.csv?...`   the API's two CSV exports

The tenant is one of the member's (`tenant` = its slug; the first one by default); another
tenant's slug is a 404. The parameters are the API's (`/api/v1/stats`) and are checked by the
same code: a bad one shows the page with the error, status 400.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from rest_framework.exceptions import ValidationError

from ai_agents.api.stats import conversations_csv, stats_csv, stats_period
from ai_agents.selectors.stats import StatsPeriod, stats_read
from ai_agents.stats.page import error_text, page_context
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.tenancy.selectors import membership_for

TEMPLATE = "ai_agents/stats/page.html"


def _tenant(request: HttpRequest) -> Tenant | None:
    """The member's tenant asked for (404 if not theirs), or their first; None without any."""
    slug = request.GET.get("tenant", "").strip()
    user: Any = request.user  # signed in (staff_member_required)
    membership = membership_for(user, slug or None)
    if membership is None and slug:
        raise Http404
    return membership.tenant if membership else None


def _csv(
    request: HttpRequest, export: Callable[[StatsPeriod], HttpResponseBase]
) -> HttpResponseBase:
    """One of the CSV exports; a bad parameter is the API's 400 `validation_error`."""
    tenant = _tenant(request)
    if tenant is None:
        raise Http404
    # The conversations are streamed after the view returns: their queryset carries its
    # tenant (for_tenant), not this block's scope.
    with tenant_scope(tenant):
        try:
            period = stats_period(tenant, request.GET)
        except ValidationError as error:
            body = {
                "error": {
                    "code": "validation_error",
                    "message": error_text(error),
                    "fields": error.detail,
                }
            }
            return JsonResponse(body, status=400)
        return export(period)


@require_GET
@staff_member_required
def stats_page(request: HttpRequest) -> HttpResponse:
    tenant = _tenant(request)
    if tenant is None:
        return render(request, TEMPLATE, {"no_tenant": True})
    with tenant_scope(tenant):
        try:
            period = stats_period(tenant, request.GET)
        except ValidationError as error:
            context = page_context(request, tenant=tenant, stats=None)
            return render(request, TEMPLATE, {**context, "error": error_text(error)}, status=400)
        stats = stats_read(period=period)
        context = page_context(request, tenant=tenant, stats=stats)
    return render(request, TEMPLATE, context)


@require_GET
@staff_member_required
def stats_page_csv(request: HttpRequest) -> HttpResponseBase:
    return _csv(request, stats_csv)


@require_GET
@staff_member_required
def stats_conversations_csv(request: HttpRequest) -> HttpResponseBase:
    return _csv(request, conversations_csv)

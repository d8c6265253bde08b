"""The team page of one tenant (`/team/<slug>/`) and the invited person's set-password page.

The tenant comes from the URL and the member's own membership in it decides everything: not a
member (or an inactive tenant) is a 404 whatever the action; an agent sees the team but every
change is a 403. A refusal re-renders the page with the reason in words (4xx), never a 500.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.views import PasswordResetConfirmView
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from erp.tenancy.models import Membership
from erp.tenancy.selectors import (
    access_tenant_object,
    membership_for,
    team_members,
    user_memberships,
)
from erp.tenancy.team.mail import invitation_send, link_days, mail_configured, password_link
from erp.tenancy.team.services import (
    MANAGERS,
    OWNER,
    Invitation,
    TeamError,
    invite_quota_take,
    member_invite,
    membership_remove,
    membership_role_set,
)


def _me(request: HttpRequest, tenant_slug: str) -> Membership:
    membership = membership_for(request.user, tenant_slug)  # type: ignore[arg-type]  # staff only
    if membership is None:
        raise Http404
    return membership


def _role_choices(me: Membership) -> list[tuple[str, str]]:
    return [
        (value, str(label))
        for value, label in Membership.Role.choices
        if value != OWNER or me.role == OWNER
    ]


def _render(
    request: HttpRequest, me: Membership, *, status: int = 200, **extra: Any
) -> HttpResponse:
    can_manage = me.role in MANAGERS
    members = [
        {
            "membership": m,
            "role_label": m.get_role_display(),
            "changeable": can_manage and (m.role != OWNER or me.role == OWNER),
            "is_me": m.user_id == me.user_id,
        }
        for m in team_members(tenant=me.tenant)
    ]
    context = {
        "me": me,
        "tenant": me.tenant,
        "can_manage": can_manage,
        "members": members,
        "role_choices": _role_choices(me),
        "teams": list(user_memberships(request.user)),  # type: ignore[arg-type]  # staff only
        "form": {"email": "", "role": Membership.Role.AGENT},
        **extra,
    }
    return render(request, "tenancy/team.html", context, status=status)


@require_GET
@staff_member_required
def team_first(request: HttpRequest) -> HttpResponse:
    membership = membership_for(request.user, None)  # type: ignore[arg-type]  # staff only
    if membership is None:
        return redirect("home")  # the start page says the user belongs to no tenant
    return redirect("team", tenant_slug=membership.tenant.slug)


@require_GET
@staff_member_required
def team_page(request: HttpRequest, tenant_slug: str) -> HttpResponse:
    return _render(request, _me(request, tenant_slug))


def _invitation_context(invitation: Invitation, sent: bool) -> dict[str, Any]:
    user = invitation.membership.user
    return {
        "invitation": invitation,
        "invited_email": user.email or user.username,
        "sent": sent,
        "mail_configured": mail_configured(),
        "link_days": link_days(),
    }


@require_POST
@staff_member_required
@never_cache
def team_invite(request: HttpRequest, tenant_slug: str) -> HttpResponse:
    me = _me(request, tenant_slug)
    email = request.POST.get("email", "")[:300]
    role = request.POST.get("role", "")[:20]
    try:
        if me.role in MANAGERS:  # an agent's refusal (403) must not use up the allowance
            invite_quota_take(tenant=me.tenant)
        invitation = member_invite(tenant=me.tenant, email=email, role=role, by_role=me.role)
    except TeamError as error:
        form = {"email": email, "role": role}
        return _render(request, me, status=error.status, error=error.message, form=form)
    user = invitation.membership.user
    # The set-password link goes to the person's own address only (see Invitation).
    link = password_link(user) if invitation.needs_password else None
    sent = False
    if not invitation.already_member or invitation.needs_password:
        sent = invitation_send(
            tenant=me.tenant,
            email=user.email or user.username,
            role=invitation.membership.role,
            inviter=request.user.get_full_name() or request.user.email,  # type: ignore[union-attr]  # staff only
            link=link,
        )
    return _render(request, me, **_invitation_context(invitation, sent))


def _target(me: Membership, membership_id: str) -> Membership:
    return access_tenant_object(Membership, me.tenant, membership_id)


@require_POST
@staff_member_required
def team_member_role(request: HttpRequest, tenant_slug: str, membership_id: str) -> HttpResponse:
    me = _me(request, tenant_slug)
    target = _target(me, membership_id)
    try:
        membership_role_set(
            membership=target, role=request.POST.get("role", "")[:20], by_role=me.role
        )
    except TeamError as error:
        return _render(request, me, status=error.status, error=error.message)
    messages.success(
        request,
        _("%(email)s ahora es %(role)s.")
        % {"email": target.user.email, "role": target.get_role_display()},
    )
    return redirect("team", tenant_slug=tenant_slug)


@require_POST
@staff_member_required
def team_member_remove(request: HttpRequest, tenant_slug: str, membership_id: str) -> HttpResponse:
    me = _me(request, tenant_slug)
    target = _target(me, membership_id)
    leaving = target.pk == me.pk
    try:
        membership_remove(membership=target, by_role=me.role)
    except TeamError as error:
        return _render(request, me, status=error.status, error=error.message)
    if leaving:  # their start page no longer lists this tenant: that says it
        return redirect("home")
    messages.success(request, _("%(email)s ya no es del equipo.") % {"email": target.user.email})
    return redirect("team", tenant_slug=tenant_slug)


class PasswordSetView(PasswordResetConfirmView):
    """The invited person chooses a password through the e-mailed link, is signed in and lands
    on the start page. An expired or used link says so and how to get a new one."""

    template_name = "tenancy/password_set.html"
    post_reset_login = True
    success_url = "/"

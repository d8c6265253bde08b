"""Writes on a tenant's team: invite, change a role, remove.

Rights follow the acting member's role in *this* tenant (`by_role`): an owner or admin invites,
re-roles and removes; only an owner grants, changes or removes the owner role. A tenant always
keeps one owner: the owner rows are locked while the last one is checked, so two owners demoting
each other at once cannot both succeed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils.translation import gettext as _

from erp import ratelimit
from erp.tenancy.models import Membership, Tenant

OWNER = Membership.Role.OWNER
MANAGERS = frozenset({Membership.Role.OWNER, Membership.Role.ADMIN})
EMAIL_MAX = 150  # the username column (the e-mail is the username)
# Invitations send e-mail to any address typed in: a bound per tenant keeps a stolen or careless
# session from turning the server into a mailer.
INVITES_PER_HOUR = 30


class TeamError(Exception):
    """A refusal in words for the person on the page; `status` is the HTTP answer."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Invitation:
    membership: Membership
    created_user: bool  # a new account, with no password yet
    already_member: bool
    # The person still has to choose a password: the e-mail carries a link. The link goes to
    # that address only, never to the inviter: whoever could set the password would own the
    # account, and with it every tenant that later invites the same address.
    needs_password: bool


def _role_checked(role: str, by_role: str) -> str:
    if by_role not in MANAGERS:
        raise TeamError(
            _("Solo el propietario o un administrador puede cambiar el equipo."), status=403
        )
    if role not in Membership.Role.values:
        raise TeamError(_("Elija un rol de la lista: agente, administrador o propietario."))
    if role == OWNER and by_role != OWNER:
        raise TeamError(_("Solo un propietario puede nombrar a otro propietario."), status=403)
    return role


def email_checked(email: str) -> str:
    email = get_user_model().objects.normalize_email(email.strip()).lower()
    if not email:
        raise TeamError(_("Escriba el correo electrónico de la persona."))
    if len(email) > EMAIL_MAX:
        raise TeamError(_("El correo electrónico es demasiado largo."))
    try:
        validate_email(email)
    except ValidationError:
        raise TeamError(
            _("«%(email)s» no es un correo electrónico válido.") % {"email": email}
        ) from None
    return email


def invite_quota_take(*, tenant: Tenant) -> None:
    """Count one invitation against the tenant's hourly allowance, or refuse it (429)."""
    result = ratelimit.hit(f"team-invite:{tenant.pk}", limit=INVITES_PER_HOUR, window_s=3600)
    if not result.allowed:
        minutes = max(1, math.ceil(result.retry_after_s / 60))
        raise TeamError(
            _(
                "Ha invitado a muchas personas en la última hora. Podrá invitar de nuevo "
                "dentro de %(minutes)s minutos."
            )
            % {"minutes": minutes},
            status=429,
        )


@transaction.atomic
def member_invite(*, tenant: Tenant, email: str, role: str, by_role: str) -> Invitation:
    """Add the person with this e-mail to the tenant with `role`, creating the account (no
    usable password: they choose one through the link) when there is none."""
    role = _role_checked(role, by_role)
    email = email_checked(email)
    User = get_user_model()
    user = User.objects.filter(username=email).first()
    created = user is None
    if user is None:
        user = User.objects.create_user(username=email, email=email, password=None)
    if not user.is_staff:  # staff pages (start page, inbox, admin) admit staff only
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    membership = Membership.objects.for_tenant(tenant).filter(user=user).first()
    already = membership is not None
    if membership is None:
        membership = Membership.objects.for_tenant(tenant).create(
            tenant=tenant, user=user, role=role
        )
    needs_password = not user.has_usable_password()
    return Invitation(
        membership=membership,
        created_user=created,
        already_member=already,
        needs_password=needs_password,
    )


def _owners_locked(tenant_id: int) -> list[int]:
    owners = Membership.objects.for_tenant(tenant_id).filter(role=OWNER).select_for_update()
    return list(owners.values_list("pk", flat=True))


def _guard_owner_change(membership: Membership, by_role: str) -> None:
    if membership.role == OWNER:
        if by_role != OWNER:
            raise TeamError(_("Solo un propietario puede cambiar a otro propietario."), status=403)
        if _owners_locked(membership.tenant_id) == [membership.pk]:
            raise TeamError(
                _(
                    "Es el único propietario de la empresa: nombre antes a otro propietario "
                    "para poder cambiarlo o quitarlo."
                )
            )


@transaction.atomic
def membership_role_set(*, membership: Membership, role: str, by_role: str) -> Membership:
    role = _role_checked(role, by_role)
    if role != membership.role:
        if role != OWNER:
            _guard_owner_change(membership, by_role)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, by_role: str) -> None:
    if by_role not in MANAGERS:
        raise TeamError(
            _("Solo el propietario o un administrador puede cambiar el equipo."), status=403
        )
    _guard_owner_change(membership, by_role)
    membership.delete()

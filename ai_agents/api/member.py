"""The inbox API's base view: a staff session acts for every tenant it belongs to.

`MemberAPIView` scopes the request to the member's tenants (all of them, or the one named by
`X-Tenant`); an API key to its tenant. Each object is then loaded among those tenants and the
rights are the member's role in THAT object's tenant (`self.memberships[tenant_id]`; None for
an API key, which acts for its tenant as a whole).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import models
from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.request import Request

from erp.api.views import TenantGenericAPIView
from erp.storable import unstorable, unstorable_message
from erp.tenancy.models import Membership
from erp.tenancy.permissions import HasTenant
from erp.tenancy.scoping import reset_scope, set_scope
from erp.tenancy.selectors import pk_or_none, user_memberships

M = TypeVar("M", bound=models.Model)


class StaffInputError(exceptions.ValidationError):
    """400 naming the field, in words."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__({field: [message]})


class MemberAPIView(TenantGenericAPIView):
    permission_classes = [HasTenant]
    memberships: dict[int, Membership | None]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        membership = getattr(request._request, "membership", None)
        if membership is None:  # an API key: its tenant only
            self.memberships = {self.tenant.pk: None}
        elif request.headers.get("X-Tenant"):
            self.memberships = {membership.tenant_id: membership}
        else:
            self.memberships = {m.tenant_id: m for m in user_memberships(request.user)}  # type: ignore[arg-type]  # a session's user here
        if self._scope_token is not None:
            reset_scope(self._scope_token)
        self._scope_token = set_scope(frozenset(self.memberships))

    @property
    def tenant_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.memberships))

    @property
    def member_user(self) -> Any:
        """The signed-in staff member; None with an API key."""
        if getattr(self.request._request, "membership", None) is None:
            return None
        return self.request.user

    def member_object(self, model: type[M], pk: Any, queryset: Any = None) -> M:
        """`model`'s row among the member's tenants, or 404 (malformed, missing or foreign)."""
        value = pk_or_none(model, pk)
        if value is None:
            raise Http404
        rows = queryset if queryset is not None else model._default_manager.all()
        found = rows.filter(pk=value, tenant_id__in=self.tenant_ids).first()
        if found is None:
            raise Http404
        return found

    def acting_staff(self, tenant_id: int, data: Any, *, required: bool = True) -> Any:
        """Who acts in `tenant_id`: the session's member, or (API key) the member named by
        `staff_email`. 400 in words when missing (if required) or not a member."""
        user = self.member_user
        if user is not None:
            return user
        email = data.get("staff_email") if isinstance(data, dict) else None
        if not email:
            if not required:
                return None
            raise StaffInputError(
                "staff_email",
                _("Con una clave de API indique staff_email: el miembro del equipo que actúa."),
            )
        return staff_member(tenant_id, str(email))


def staff_member(tenant_id: int, email: str) -> Any:
    """The active staff user with this e-mail who is a member of `tenant_id`; 400 otherwise."""
    if unstorable(email):  # NUL or a lone surrogate: no query can carry it
        raise StaffInputError("staff_email", unstorable_message())
    member_ids = Membership.objects.for_tenant(tenant_id).values_list("user_id", flat=True)
    user = (
        get_user_model()
        .objects.filter(
            pk__in=list(member_ids), email__iexact=email.strip(), is_active=True, is_staff=True
        )
        .order_by("pk")
        .first()
    )
    if user is None:
        raise StaffInputError(
            "staff_email",
            _("%(email)s no es miembro del equipo de esta empresa.") % {"email": email[:200]},
        )
    return user

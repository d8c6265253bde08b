"""Factories for the platform's rows. Apps add theirs next to their tests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import factory
from django.contrib.auth import get_user_model

from erp.tenancy.models import Membership, Tenant


class TenantFactory(factory.django.DjangoModelFactory[Tenant]):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.Sequence(lambda n: f"Empresa {n}")
    timezone = "America/Mexico_City"
    ai_credit_balance_usd = Decimal("100")


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}@example.com")
    email = factory.SelfAttribute("username")
    is_staff = True
    password = factory.PostGenerationMethodCall("set_password", "pass-1234")

    @factory.post_generation
    def _save(user: Any, create: bool, extracted: Any, **kwargs: Any) -> None:
        # Called with the built user, not the factory.
        if create:
            user.save()


class MembershipFactory(factory.django.DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    tenant = factory.SubFactory(TenantFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.OWNER

    @classmethod
    def _create(cls, model_class: type[Membership], *args: Any, **kwargs: Any) -> Membership:
        return model_class.objects.for_tenant(kwargs["tenant"]).create(*args, **kwargs)


def usage_spent(tenant: Tenant, usd: str) -> None:
    """A ledger row costing `usd` this month (model "test/cent-per-token": a cent a token),
    written the way the gateway writes them (adds to the cached spend)."""
    from erp.llm.models import ModelPrice
    from erp.llm.usage import usage_record

    ModelPrice.objects.get_or_create(
        provider="test",
        model="cent-per-token",
        defaults={
            "input_per_million_usd": Decimal("10000"),
            "output_per_million_usd": Decimal("0"),
        },
    )
    usage_record(
        tenant=tenant,
        operation="llm_request",
        provider="test",
        model="cent-per-token",
        input_tokens=int(Decimal(usd) * 100),
    )

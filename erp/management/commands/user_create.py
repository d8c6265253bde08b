from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from erp.tenancy.models import Membership, Tenant
from erp.tenancy.services import user_create


class Command(BaseCommand):
    help = "Crea (o actualiza) un usuario de personal con membresía en la empresa. Imprime su id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--role", required=True, choices=list(Membership.Role.values))
        parser.add_argument("--password", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No existe la empresa {options['tenant']!r}.")
        if "@" not in options["email"]:
            raise CommandError("El correo no es válido.")
        user = user_create(
            email=options["email"],
            tenant=tenant,
            role=options["role"],
            password=options["password"],
        )
        self.stdout.write(str(user.pk))

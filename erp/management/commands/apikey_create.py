from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from erp.tenancy.models import Tenant
from erp.tenancy.services import apikey_create


class Command(BaseCommand):
    help = "Crea una clave de API para la empresa. Imprime la clave, sola en la línea."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["slug"]).first()
        if tenant is None:
            raise CommandError(f"No existe la empresa {options['slug']!r}.")
        created = apikey_create(tenant=tenant, name=options["name"])
        self.stdout.write(created.key)

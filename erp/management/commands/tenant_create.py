from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from erp.tenancy.services import tenant_create


class Command(BaseCommand):
    help = "Crea una empresa (idempotente). Imprime su id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--timezone", default=None)
        parser.add_argument("--language", default=None, choices=["es", "en"])

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            tenant, created = tenant_create(
                slug=options["slug"],
                name=options["name"],
                timezone_name=options["timezone"],
                language=options["language"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        if options["verbosity"] > 1:
            self.stderr.write("created" if created else "already existed")
        self.stdout.write(str(tenant.pk))

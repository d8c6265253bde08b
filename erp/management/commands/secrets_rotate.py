from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from erp.crypto import secrets_rotate


class Command(BaseCommand):
    help = (
        "Vuelve a cifrar todos los secretos guardados con la clave más reciente de "
        "FIELD_ENCRYPTION_KEYS. Después se puede retirar la clave anterior."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=500)

    def handle(self, *args: Any, **options: Any) -> None:
        results = secrets_rotate(batch_size=options["batch_size"])
        for result in results:
            self.stdout.write(f"{result.label}: {result.rotated} rotated, {result.failed} failed")
        rotated = sum(r.rotated for r in results)
        failed = sum(r.failed for r in results)
        self.stdout.write(f"total: {rotated} rotated, {failed} failed")
        if failed:
            raise CommandError(
                f"{failed} values could not be decrypted with any configured key; "
                "keep the old keys until they are fixed"
            )

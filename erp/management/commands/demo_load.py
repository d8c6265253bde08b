from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.utils.translation import gettext as _

from erp.demo import demo_load


class Command(BaseCommand):
    help = "Carga la empresa de demostración (idempotente). Imprime el acceso de demostración."

    def handle(self, *args: Any, **options: Any) -> None:
        login = demo_load()
        password = login.password or _("(contraseña cambiada; se conserva)")
        self.stdout.write(f"{login.email} / {password}")

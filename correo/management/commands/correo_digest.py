"""`manage.py correo_digest [--user EMAIL]`: build today's digest now (all connected members,
or one). Prints one line per member and, last, how many digests were stored."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from correo.digest import digest_build
from correo.mailbox import MailboxError
from correo.models import ZohoConnection
from correo.tasks import connected_members
from erp.llm.errors import LlmError
from erp.tenancy.models import Tenant


class Command(BaseCommand):
    help = "Genera el informe diario del buzón (últimas 24 h) de los miembros conectados."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", metavar="EMAIL", help="solo este miembro")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model().objects
        if options["user"]:
            user = users.filter(email__iexact=options["user"]).first()
            if user is None:
                raise CommandError(f"no existe el usuario {options['user']}")
            conn = ZohoConnection.objects.unscoped().filter(owner=user).first()
            if conn is None or not conn.is_connected:
                raise CommandError(f"{user.email}: buzón sin conectar (/correo/zoho/connect)")
            members = [(user.pk, conn.tenant_id)]
        else:
            members = connected_members()
        stored = 0
        for user_id, tenant_id in members:
            user = users.get(pk=user_id)
            try:
                digest = digest_build(user=user, tenant=Tenant.objects.get(pk=tenant_id))
            except (MailboxError, LlmError) as exc:
                self.stderr.write(f"{user.email}: error {exc.code}")
                continue
            stored += 1
            self.stdout.write(f"{user.email}: {digest.resumen}, {digest.ruido_count} de ruido")
        self.stdout.write(f"{stored} informes")
        if members and not stored:
            raise CommandError("no se generó ningún informe")

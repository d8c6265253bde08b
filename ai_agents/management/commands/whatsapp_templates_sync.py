"""`manage.py whatsapp_templates_sync [--channel CHANNEL_ID]`: reads the WhatsApp templates of
every active WhatsApp channel with a WABA id (or of one channel) from the Graph API, prints
what changed per channel and exits 1 when a channel could not be read."""

from __future__ import annotations

import sys
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ai_agents.models import ChannelBinding
from ai_agents.services.whatsapp_templates import TemplateSyncError, whatsapp_templates_sync


class Command(BaseCommand):
    help = "Sincroniza las plantillas de WhatsApp de los canales desde la API de Graph."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--channel", help="id de un canal de WhatsApp (por defecto: todos)")

    def handle(self, *args: Any, **options: Any) -> None:
        failed = 0
        for binding in _bindings(options.get("channel")):
            try:
                result = whatsapp_templates_sync(binding=binding)
            except TemplateSyncError as error:
                self.stderr.write(f"{binding.pk} {binding}: {error.message}")
                failed += 1
                continue
            counts = result.as_dict()
            self.stdout.write(
                f"{binding.pk} {binding}: {counts['created']} nuevas, "
                f"{counts['updated']} actualizadas, {counts['removed']} ya no están en Meta"
            )
        if failed:
            sys.exit(1)


def _bindings(channel: str | None) -> list[ChannelBinding]:
    # An operator's command: every tenant's channels (maintenance, hence `unscoped`).
    rows = ChannelBinding.objects.unscoped().filter(type=ChannelBinding.Type.WHATSAPP)
    if channel is None:
        return list(rows.filter(is_active=True).exclude(waba_id="").order_by("created_at"))
    try:
        pk = uuid.UUID(channel)
    except ValueError:
        raise CommandError(f"Canal desconocido: {channel}") from None
    found = list(rows.filter(pk=pk))
    if not found:
        raise CommandError(f"Canal desconocido: {channel}")
    return found

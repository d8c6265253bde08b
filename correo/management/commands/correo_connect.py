from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from correo.zoho.errors import ZohoAuthError, ZohoError, ZohoNotConnected
from correo.zoho.oauth import DATA_CENTRES
from correo.zoho.services import zoho_connect_with_refresh_token
from erp.tenancy.selectors import membership_for


class Command(BaseCommand):
    help = (
        "Conecta el buzón de Zoho Mail de un miembro del personal con un refresh token de "
        "self-client. Lo valida renovándolo una vez; imprime el id de cuenta en la última línea."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email", help="correo (o usuario) del miembro del personal")
        parser.add_argument("--refresh-token", required=True)
        parser.add_argument(
            "--data-centre",
            choices=sorted(DATA_CENTRES),
            default=None,
            help="centro de datos de Zoho (com, eu, in, ...); sin él, ZOHO_ACCOUNTS_BASE_URL "
            "y ZOHO_MAIL_BASE_URL",
        )
        parser.add_argument("--tenant", default=None, help="slug de la empresa (si hay varias)")

    def handle(self, *args: Any, **options: Any) -> None:
        email = options["email"].strip()
        users = get_user_model().objects.filter(Q(email__iexact=email) | Q(username__iexact=email))
        user = users.order_by("id").first()
        if user is None:
            raise CommandError(f"No existe ningún usuario {email!r}.")
        if not user.is_staff or not user.is_active:
            raise CommandError(f"{email!r} no es un miembro activo del personal.")
        membership = membership_for(user, options["tenant"])
        if membership is None:
            raise CommandError(f"{email!r} no pertenece a ninguna empresa activa.")
        token = options["refresh_token"].strip()
        if not token:
            raise CommandError("El refresh token está vacío.")
        try:
            conn = zoho_connect_with_refresh_token(
                owner=user,
                tenant=membership.tenant,
                refresh_token=token,
                data_centre=options["data_centre"],
            )
        except ZohoNotConnected as error:
            raise CommandError(f"Zoho no está configurado: {error}") from None
        except ZohoAuthError as error:
            raise CommandError(f"Zoho rechaza el refresh token ({error.code}).") from None
        except ZohoError as error:
            raise CommandError(f"Zoho no responde: {type(error).__name__}: {error}") from None
        self.stdout.write(f"Buzón conectado: {conn.email or '-'} ({membership.tenant.slug})")
        self.stdout.write(conn.account_id)

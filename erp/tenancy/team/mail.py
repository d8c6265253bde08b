"""The invitation e-mail and its one-time "choose your password" link.

The link is Django's password-reset token: it expires after `PASSWORD_RESET_TIMEOUT` and stops
working once used (the token hashes the password and the last login). The e-mail is sent after
the invitation is committed, outside any transaction: an SMTP server may be slow or absent.
"""

from __future__ import annotations

import logging
import smtplib

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import translation
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from erp.tenancy.models import Membership, Tenant

logger = logging.getLogger(__name__)

# Backends that deliver nothing to anybody: the page says so instead of "sent".
UNDELIVERED_BACKENDS = frozenset(
    {
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.dummy.EmailBackend",
        "django.core.mail.backends.filebased.EmailBackend",
    }
)


def password_link(user: User) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    path = reverse("team-password-set", kwargs={"uidb64": uid, "token": token})
    return f"{settings.SITE_URL}{path}"


def link_days() -> int:
    return max(1, round(settings.PASSWORD_RESET_TIMEOUT / 86400))


def mail_configured() -> bool:
    return settings.EMAIL_BACKEND not in UNDELIVERED_BACKENDS


def invitation_send(
    *, tenant: Tenant, email: str, role: str, inviter: str, link: str | None
) -> bool:
    """Send the invitation (in the tenant's language); False when the server refused it."""
    with translation.override(tenant.language):
        subject = _("Le han invitado al equipo de %(tenant)s") % {"tenant": tenant.name}
        lines = [
            _("%(inviter)s le ha añadido al equipo de %(tenant)s con el rol «%(role)s».")
            % {"inviter": inviter, "tenant": tenant.name, "role": str(Membership.Role(role).label)},
            "",
        ]
        if link:
            lines += [
                _("Para entrar, elija su contraseña en este enlace (caduca en %(days)s días):")
                % {"days": link_days()},
                link,
            ]
        else:
            lines.append(
                _("Entre con su contraseña de siempre en %(url)s")
                % {"url": settings.SITE_URL + "/"}
            )
    try:
        send_mail(subject, "\n".join(lines), None, [email])
    except (OSError, smtplib.SMTPException):
        logger.warning("team_invitation_unsent", extra={"tenant_id": tenant.pk}, exc_info=True)
        return False
    return True

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CorreoConfig(AppConfig):
    name = "correo"
    verbose_name = _("Secretaria de correo")

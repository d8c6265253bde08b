from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TenancyConfig(AppConfig):
    name = "erp.tenancy"
    label = "tenancy"
    verbose_name = _("Empresas y acceso")

    def ready(self) -> None:
        from erp.api import schema  # noqa: F401  (registers the OpenAPI auth schemes)

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LlmConfig(AppConfig):
    name = "erp.llm"
    label = "llm"
    verbose_name = _("Modelos de lenguaje y consumo")

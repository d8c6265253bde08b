from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AiAgentsConfig(AppConfig):
    name = "ai_agents"
    verbose_name = _("Agentes de IA")

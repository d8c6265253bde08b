from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AiAgentsConfig(AppConfig):
    name = "ai_agents"
    verbose_name = _("Agentes de IA")

    def ready(self) -> None:
        from ai_agents.demo import demo_knowledge_load
        from erp.demo import DEMO_LOADERS

        if demo_knowledge_load not in DEMO_LOADERS:
            DEMO_LOADERS.append(demo_knowledge_load)

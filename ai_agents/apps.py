from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AiAgentsConfig(AppConfig):
    name = "ai_agents"
    verbose_name = _("Agentes de IA")

    def ready(self) -> None:
        # Connects the receivers that keep the WhatsApp binding cache in line with the rows.
        import ai_agents.channels.whatsapp.bindings  # noqa: F401
        from ai_agents.demo import demo_agent_load, demo_knowledge_load, demo_webchat_load
        from erp.demo import DEMO_LOADERS

        # The agent needs the base; the web chat needs the agent.
        for loader in (demo_knowledge_load, demo_agent_load, demo_webchat_load):
            if loader not in DEMO_LOADERS:
                DEMO_LOADERS.append(loader)

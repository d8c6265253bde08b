from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AiAgentsConfig(AppConfig):
    name = "ai_agents"
    verbose_name = _("Agentes de IA")

    def ready(self) -> None:
        # Connects the receivers that keep the WhatsApp binding cache in line with the rows.
        import ai_agents.channels.whatsapp.bindings  # noqa: F401
        from ai_agents.demo import demo_agent_load, demo_knowledge_load, demo_webchat_load
        from ai_agents.models import Conversation
        from erp.demo import DEMO_LOADERS
        from erp.llm.conversation_cost import conversation_cost_register

        # Each usage row's statement adds its cost to its conversation (the statistics' cost).
        conversation_cost_register(table=Conversation._meta.db_table, column="cost_usd")

        # The agent needs the base; the web chat needs the agent.
        for loader in (demo_knowledge_load, demo_agent_load, demo_webchat_load):
            if loader not in DEMO_LOADERS:
                DEMO_LOADERS.append(loader)

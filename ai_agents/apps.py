from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

EXPIRY_BEAT_ENTRY = "ai-agents-expire-conversations"
SWEEP_BEAT_ENTRY = "ai-agents-channel-pending-sweep"


class AiAgentsConfig(AppConfig):
    name = "ai_agents"
    verbose_name = _("Agentes de IA")

    def ready(self) -> None:
        from django.conf import settings

        # RN-7 (24 h inactivity), checked every 15 minutes; erp/settings.py does not name
        # this app.
        settings.CELERY_BEAT_SCHEDULE.setdefault(
            EXPIRY_BEAT_ENTRY,
            {"task": "ai_agents.bulk_expire_conversations", "schedule": 15 * 60.0},
        )
        settings.CELERY_BEAT_SCHEDULE.setdefault(
            SWEEP_BEAT_ENTRY,
            {
                "task": "ai_agents.channel_pending_sweep",
                "schedule": float(settings.CHANNEL_PENDING_SWEEP_SECONDS),
            },
        )
        from ai_agents.demo import demo_agent_load, demo_knowledge_load, demo_webchat_load
        from erp.demo import DEMO_LOADERS

        # The agent needs the base; the web chat needs the agent.
        for loader in (demo_knowledge_load, demo_agent_load, demo_webchat_load):
            if loader not in DEMO_LOADERS:
                DEMO_LOADERS.append(loader)

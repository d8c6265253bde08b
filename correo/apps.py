from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

DIGEST_BEAT_ENTRY = "correo-digest-daily"


class CorreoConfig(AppConfig):
    name = "correo"
    verbose_name = _("Secretaria de correo")

    def ready(self) -> None:
        from celery.schedules import crontab
        from django.conf import settings

        # Daily at 06:00 (CELERY_TIMEZONE); erp/settings.py does not name this app.
        settings.CELERY_BEAT_SCHEDULE.setdefault(
            DIGEST_BEAT_ENTRY,
            {"task": "correo.tasks.bulk_correo_digest_all", "schedule": crontab(hour=6, minute=0)},
        )

"""The beat schedule is declared once, in erp/settings.py: every entry names a registered task,
and starting the apps adds nothing to it."""

from __future__ import annotations

from celery.schedules import crontab
from django.apps import apps
from django.conf import settings

from erp.celery import app


def test_the_schedule_is_the_one_in_settings_and_names_registered_tasks() -> None:
    app.loader.import_default_modules()
    schedule = settings.CELERY_BEAT_SCHEDULE

    assert {name: entry["task"] for name, entry in schedule.items()} == {
        "ai-agents-expire-conversations": "ai_agents.bulk_expire_conversations",
        "ai-agents-channel-pending-sweep": "ai_agents.channel_pending_sweep",
        "ai-agents-claimed-replies-sweep": "ai_agents.bulk_claimed_replies_sweep",
        "ai-agents-renotify-escalations": "ai_agents.bulk_renotify_escalations",
        "ai-agents-media-expire": "ai_agents.bulk_media_expire",
        "ai-agents-whatsapp-templates-sync": "ai_agents.bulk_whatsapp_templates_sync",
        "ai-agents-whatsapp-followups": "ai_agents.bulk_whatsapp_followups",
        "correo-digest-daily": "correo.tasks.bulk_correo_digest_all",
    }
    assert schedule["ai-agents-expire-conversations"]["schedule"] == 15 * 60.0
    assert schedule["ai-agents-channel-pending-sweep"]["schedule"] == float(
        settings.CHANNEL_PENDING_SWEEP_SECONDS
    )
    assert schedule["ai-agents-claimed-replies-sweep"]["schedule"] == float(
        settings.CHANNEL_PENDING_SWEEP_SECONDS
    )
    assert schedule["ai-agents-renotify-escalations"]["schedule"] == float(
        settings.HANDOFF_RENOTIFY_SWEEP_SECONDS
    )
    assert schedule["ai-agents-media-expire"]["schedule"] == 60 * 60.0
    assert schedule["correo-digest-daily"]["schedule"] == crontab(hour=6, minute=0)
    assert schedule["ai-agents-whatsapp-templates-sync"]["schedule"] == crontab(hour=5, minute=30)
    assert schedule["ai-agents-whatsapp-followups"]["schedule"] == float(
        settings.WHATSAPP_FOLLOWUP_SWEEP_SECONDS
    )
    assert app.conf.beat_schedule == schedule
    assert [entry["task"] for entry in schedule.values() if entry["task"] not in app.tasks] == []


def test_starting_the_apps_again_leaves_the_schedule_alone() -> None:
    before = dict(settings.CELERY_BEAT_SCHEDULE)

    for label in ("ai_agents", "correo"):
        apps.get_app_config(label).ready()

    assert before == settings.CELERY_BEAT_SCHEDULE


_BEAT_PROCESS = """
import json, sys
from erp.celery import app
beat = app.Beat(schedule="/dev/null")
beat.init_loader()  # what `celery -A erp beat` runs before its scheduler starts
queues = {
    entry["task"]: app.amqp.router.route({}, entry["task"])["queue"].name
    for entry in app.conf.beat_schedule.values()
}
loaded = [m for m in ("ai_agents.models", "ai_agents.tasks", "correo.tasks") if m in sys.modules]
print(json.dumps({"queues": queues, "loaded": loaded, "registered": len(app.tasks)}))
"""


def test_beat_sends_every_entry_by_name_to_its_queue_without_loading_the_apps() -> None:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        [sys.executable, "-c", _BEAT_PROCESS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    # the beat process imports neither the models nor a tasks module: it sends by name
    assert seen["loaded"] == []
    # and the name alone routes each entry: bulk_* to the bulk queue, the rest real-time
    assert seen["queues"] == {
        entry["task"]: "bulk" if ".bulk_" in str(entry["task"]) else "realtime"
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }
    assert seen["queues"]["ai_agents.channel_pending_sweep"] == "realtime"

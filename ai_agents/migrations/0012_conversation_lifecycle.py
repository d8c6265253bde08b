"""Issue 15, after an escalation: reminders to the team while an escalated conversation waits
(`HandoffSettings.renotify_minutes`, `Conversation.renotified_at` / `renotify_count`), the
conversation a new one follows (`previous_conversation`), and `escalated_to` as the staff member
who took it (it was a UUID nothing wrote: dropped and added again as a user reference)."""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ai_agents", "0011_conversation_turn_lease"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="previous_conversation",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="ai_agents.conversation",
                verbose_name="conversación anterior",
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="renotified_at",
            field=models.DateTimeField(
                editable=False, null=True, verbose_name="último recordatorio"
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="renotify_count",
            field=models.PositiveSmallIntegerField(
                default=0, editable=False, verbose_name="recordatorios"
            ),
        ),
        migrations.AddField(
            model_name="handoffsettings",
            name="renotify_minutes",
            field=models.PositiveIntegerField(
                default=30,
                help_text=(
                    "Si nadie atiende una conversación escalada, se vuelve a avisar tras estos "
                    "minutos (como mucho 3 recordatorios). 0: nunca."
                ),
                validators=[django.core.validators.MaxValueValidator(1440)],
                verbose_name="recordar al equipo cada (minutos)",
            ),
        ),
        # A UUID cannot become a user id: nothing ever wrote the old column.
        migrations.RemoveField(model_name="conversation", name="escalated_to"),
        migrations.AddField(
            model_name="conversation",
            name="escalated_to",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="escalada a",
            ),
        ),
    ]

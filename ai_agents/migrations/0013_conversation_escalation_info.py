from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ai_agents', '0012_conversation_lifecycle'),
    ]

    operations = [
        migrations.AddField(
            model_name='conversation',
            name='escalation_info',
            field=models.JSONField(blank=True, default=dict, verbose_name='datos de la escalación'),
        ),
        migrations.AddField(
            model_name='conversation',
            name='model_failures',
            field=models.IntegerField(default=0, verbose_name='fallos seguidos del modelo'),
        ),
    ]

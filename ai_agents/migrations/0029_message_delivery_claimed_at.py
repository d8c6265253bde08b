from django.db import migrations, models

# A nullable column without default changes only the catalog (the partial index that reads it
# is built without blocking writes in 0030, a migration of its own: a failed concurrent build
# then leaves this one applied, and 0030 runs again alone).


class Migration(migrations.Migration):
    dependencies = [
        ("ai_agents", "0028_message_attempts"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="delivery_claimed_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="envío reclamado"),
        ),
    ]

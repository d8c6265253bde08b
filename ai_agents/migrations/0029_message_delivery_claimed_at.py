from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

# A nullable column without default changes only the catalog; the partial index (the few
# messages whose send is "pending") is built without blocking writes.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("ai_agents", "0028_message_attempts"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="delivery_claimed_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="envío reclamado"),
        ),
        AddIndexConcurrently(
            model_name="message",
            index=models.Index(
                condition=models.Q(("delivery_status", "pending")),
                fields=["created_at"],
                name="msg_claimed",
            ),
        ),
    ]

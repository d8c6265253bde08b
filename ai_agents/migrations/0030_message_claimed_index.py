from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

# The few messages whose send is "pending", for the sweep (delivery_sweep.py); built without
# blocking writes to the messages table.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("ai_agents", "0029_message_delivery_claimed_at"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="message",
            index=models.Index(
                condition=models.Q(("delivery_status", "pending")),
                fields=["created_at"],
                name="msg_claimed",
            ),
        ),
    ]

from django.db import migrations


class Migration(migrations.Migration):
    """Keep vectors inline in the row (compressed if needed) instead of out-of-line TOAST, so
    an exact scan over a knowledge base's chunks does not fetch one TOAST row per vector."""

    dependencies = [("ai_agents", "0003_hnsw_indexes")]
    operations = [
        migrations.RunSQL(
            "ALTER TABLE ai_agents_chunk ALTER COLUMN embedding SET STORAGE MAIN",
            "ALTER TABLE ai_agents_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL",
        )
    ]

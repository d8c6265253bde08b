from django.db import migrations

CREATE = """
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'es_unaccent') THEN
        CREATE TEXT SEARCH CONFIGURATION es_unaccent (COPY = pg_catalog.spanish);
        ALTER TEXT SEARCH CONFIGURATION es_unaccent
            ALTER MAPPING FOR hword, hword_part, word WITH unaccent, spanish_stem;
    END IF;
END
$$;
"""


class Migration(migrations.Migration):
    """`es_unaccent`: Spanish stemming after accent folding, for the chunks' full-text vector."""

    initial = True
    dependencies = [("erp", "0001_extensions")]
    operations = [
        migrations.RunSQL(CREATE, "DROP TEXT SEARCH CONFIGURATION IF EXISTS es_unaccent"),
    ]

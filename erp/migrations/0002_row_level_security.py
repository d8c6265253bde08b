"""Row-level security on every tenant-owned table, and the application's role (see
erp/tenancy/rls.py). Runs as the owner; a later tenant-owned table adds
`EnableRowLevelSecurity("<table>")` to its own migration (erp/tests/test_rls.py checks)."""

from typing import Any

from django.conf import settings
from django.db import migrations

from erp.tenancy.rls import EnableRowLevelSecurity, app_role_ensure

TABLES = [
    "llm_usagelog",
    "ai_agents_agent",
    "ai_agents_contact",
    "ai_agents_conversation",
    "ai_agents_message",
    "ai_agents_channelbinding",
    "ai_agents_delivery",
    "ai_agents_handoffsettings",
    "ai_agents_knowledgebase",
    "ai_agents_document",
    "ai_agents_chunk",
    "ai_agents_httptool",
    "correo_zohoconnection",
    "correo_digest",
    "correo_chatquery",
]


def app_role(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        app_role_ensure(
            cursor, settings.DATABASE_APP_ROLE, password=settings.DATABASE_APP_PASSWORD
        )


def full_text_leakproof(apps: Any, schema_editor: Any) -> None:
    # Under row security PostgreSQL only lets a leakproof operator use an index before the
    # policy has filtered the rows; `@@` (ts_match_vq) is not marked so, which made the
    # knowledge search's full-text list scan every chunk of the tenant (bench/kb_search.py:
    # lexical P50 11 -> 165 ms). It reveals nothing but its result (no error depends on the
    # row), so it is marked leakproof. Only a superuser may; otherwise the search still works,
    # slower.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if cursor.fetchone()[0]:
            cursor.execute("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF")


# The knowledge search drops lexemes frequent across the chunk table (planner statistics,
# ai_agents/selectors/knowledge.py). pg_stats hides the statistics of a table under row
# security from a role subject to it, so the application's role reads them through this
# function, run as the owner (only a superuser owner sees them; otherwise it returns none and
# the search keeps every lexeme, slower on common words).
FREQUENT_LEXEMES = """
CREATE OR REPLACE FUNCTION chunk_frequent_lexemes(min_count float8) RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
SELECT coalesce(array_agg(e.lexeme), '{}')
FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
CROSS JOIN LATERAL unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs)
    AS e(lexeme, freq)
WHERE s.schemaname = 'public' AND s.tablename = 'ai_agents_chunk'
  AND s.attname = 'search_vector' AND e.lexeme IS NOT NULL AND e.freq * c.reltuples >= min_count
$$
"""


class Migration(migrations.Migration):
    dependencies = [
        ("erp", "0001_extensions"),
        ("tenancy", "0001_initial"),
        ("llm", "0001_usage_ledger"),
        ("ai_agents", "0010_httptool_contact_variables_help"),
        ("correo", "0001_initial"),
    ]

    operations = [
        EnableRowLevelSecurity(*TABLES),
        migrations.RunPython(app_role, migrations.RunPython.noop),
        migrations.RunPython(full_text_leakproof, migrations.RunPython.noop),
        migrations.RunSQL(FREQUENT_LEXEMES, "DROP FUNCTION IF EXISTS chunk_frequent_lexemes"),
    ]

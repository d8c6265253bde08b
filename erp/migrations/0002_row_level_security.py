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
    ]

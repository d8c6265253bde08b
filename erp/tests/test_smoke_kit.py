import pytest
from django.db import connection


@pytest.mark.django_db
def test_database_is_embedded_postgres_with_pgvector():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone() is not None
        cursor.execute("SHOW server_version")
        assert cursor.fetchone()[0].startswith("18")

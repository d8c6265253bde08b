from django.contrib.postgres.operations import CreateExtension, UnaccentExtension
from django.db import migrations


class Migration(migrations.Migration):
    """Extensions every app relies on: pgvector (embeddings) and unaccent (Spanish search)."""

    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [CreateExtension("vector"), UnaccentExtension()]

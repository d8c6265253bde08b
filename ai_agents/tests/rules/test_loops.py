"""Loop detection: the same message again, the customer saying so, a reference repeated, the
assistant repeating itself."""

from __future__ import annotations

from ai_agents.rules.loops import answer_repeats, loop_detail, references, similar


def test_the_same_question_twice_is_a_loop_a_short_answer_twice_is_not() -> None:
    assert loop_detail("¿Dónde está mi pedido?", recent_user_texts=["donde esta mi pedido"])
    assert loop_detail("donde esta mi pedidio", recent_user_texts=["¿Dónde está mi pedido?"])
    assert loop_detail("sí", recent_user_texts=["sí", "sí"]) is None
    assert loop_detail("gracias", recent_user_texts=["gracias"]) is None
    plan_a = ["What's the price of plan A?"]
    assert loop_detail("What's the price of plan B?", recent_user_texts=plan_a) is None


def test_the_customer_saying_they_repeat_themselves() -> None:
    for text in [
        "Se lo he dicho ya varias veces, el pedido no llega",
        "ya te lo dije",
        "Es la tercera vez que lo pregunto",
        "I already told you, it's been 20 days",
        "You keep giving me the same answer",
        "estamos dando vueltas",
    ]:
        assert loop_detail(text, recent_user_texts=[]) is not None, text
    assert loop_detail("I already told my friends about you", recent_user_texts=[]) is None
    assert loop_detail("ya le dije a mi esposo", recent_user_texts=[]) is None


def test_the_same_reference_again() -> None:
    assert references("Mi pedido 48213, correo ana@example.com") == {"48213", "ana@example.com"}
    assert loop_detail("48213", recent_user_texts=["Mi pedido es el 48213"])
    assert loop_detail("Ya les di el folio A-7731", recent_user_texts=["A-7731", "folio A-7731"])
    # A reference mentioned again within a new question is no loop.
    assert loop_detail("¿El 48213 incluye la funda?", recent_user_texts=["el 48213"]) is None


def test_the_assistant_giving_the_same_answer_twice() -> None:
    same = "Puede consultar el estado en Mis pedidos."
    assert loop_detail("¿y entonces?", recent_user_texts=["a", "b"], assistant_texts=[same, same])
    assert answer_repeats(same, ["Otra cosa distinta del todo.", same])
    assert not answer_repeats("Claro.", ["Claro."])  # too short to count
    assert not answer_repeats(same, [])
    assert similar("Hola, ¿qué tal?", "hola que tal")

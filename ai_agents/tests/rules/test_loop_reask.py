"""Loop detection after an answer: the marker families of a customer asking again (the count
of askings, "same question", "you are not answering", "I already told / gave you", the
re-focus "te pregunto X, no Y", "simple question") and the re-ask in other words after two
(nearly) equal answers that did not take the question up; with the non-loop traps."""

from __future__ import annotations

from ai_agents.rules.loop_reask import reasked
from ai_agents.rules.loops import loop_detail

ASKED = ["¿Abren el domingo?"]
ANSWERED = ["Nuestro horario de lunes a sábado es de 9 a 18 h."]


def _loop(text: str, answered: bool = True) -> str | None:
    return loop_detail(text, recent_user_texts=ASKED, assistant_texts=ANSWERED if answered else [])


def test_the_count_of_askings_in_spanish_and_english() -> None:
    for text in [
        "por segunda vez, ¿abren el domingo?",
        "For the third time, are you open on Sunday?",
        "I'm asking whether you open on Sunday, for the second time",
        "te pregunto si abren el domingo por tercera vez",
        "asking for the fourth time: Sunday, open or not?",
    ]:
        assert _loop(text), text
    # A problem repeated, not the asking: no loop.
    assert _loop("por segunda vez, el pan llegó duro") is None
    assert _loop("the delivery failed for the second time today") is None


def test_the_same_question_and_not_answering() -> None:
    for text in [
        "Misma pregunta: ¿abren el domingo?",
        "same question as before, do you open Sundays",
        "no me respondes, ¿abren el domingo o no?",
        "no me contestas lo que pregunto",
        "no me está entendiendo, hablo del domingo",
        "you're not answering my question about Sunday",
        "that doesn't answer my question",
    ]:
        assert _loop(text), text
    # Before any answer these are a first message, not a loop.
    assert _loop("no me respondes, ¿abren el domingo?", answered=False) is None
    # Someone else not answering is a first complaint.
    assert _loop("el repartidor no me contesta el teléfono") is None


def test_the_thing_already_told_or_given() -> None:
    for text in [
        "Reservé el sábado, te lo dije. ¿Está confirmado?",
        "AB-77120. Ya se la di.",
        "That's what you said last time. Are you open Sunday?",
        "Eso mismo me contestaron ayer. ¿Abren el domingo?",
        "I already gave it to you before",
    ]:
        assert _loop(text), text
    assert _loop("Te lo dije a ti o a tu compañera? Da igual, ¿abren el domingo?") is None
    assert _loop("no te lo dije antes: también quiero una tarta") is None


def test_the_refocus_and_the_simple_question_on_what_was_asked() -> None:
    for text in [
        "Te estoy preguntando por el DOMINGO, no por el sábado",
        "es una pregunta sencilla: ¿abren el domingo?",
        "solo quiero saber si abren el domingo",
    ]:
        assert _loop(text), text
    english = ["Are you open on Sunday?"]
    for text in ["I'm asking about Sunday, not Saturday", "open on sunday? simple question"]:
        assert loop_detail(text, recent_user_texts=english, assistant_texts=ANSWERED), text
    assert _loop("solo quiero saber si abren el domingo", answered=False) is None
    # The same words about a NEW question: no loop.
    assert _loop("gracias, solo quiero saber si hacen envíos") is None
    new = "I have a simple question: do you deliver cakes?"
    assert loop_detail(new, recent_user_texts=english, assistant_texts=ANSWERED) is None
    other = "I'm asking about the delivery fee too"
    assert loop_detail(other, recent_user_texts=english, assistant_texts=ANSWERED) is None


REFUND_ASKED = ["Devolví la chaqueta hace 20 días, ¿y el reembolso?", "ya pasaron 20 días"]
REFUND_SAME = [
    "Los reembolsos se procesan en un plazo de 5 a 10 días hábiles.",
    "Los reembolsos tardan entre 5 y 10 días hábiles en procesarse.",
]
PETS_ASKED = ["Does the flat accept pets?", "ok but can I live there with a cat?"]
PETS_SAME = [
    "The flat has 2 bedrooms, a balcony and parking.",
    "The flat has 2 bedrooms, a sunny balcony and its own parking.",
]


def test_asking_again_in_other_words_after_two_equal_answers_that_missed_it() -> None:
    assert reasked("¿dónde está mi dinero?", REFUND_ASKED, REFUND_SAME)
    assert reasked("RF-1. van 20 dias. donde esta mi plata", REFUND_ASKED, REFUND_SAME)
    assert reasked("Is a small dog allowed in the flat?", PETS_ASKED, PETS_SAME)
    detail = loop_detail(
        "I have a tiny dog. Could it stay with me?",
        recent_user_texts=PETS_ASKED,
        assistant_texts=PETS_SAME,
    )
    assert detail


def test_no_reask_without_the_question_or_with_an_answer_that_took_it_up() -> None:
    # "ok" / "gracias" after two equal answers: no question.
    assert reasked("ok gracias, espero entonces", REFUND_ASKED, REFUND_SAME) is None
    assert reasked("fine, I'll wait then", PETS_ASKED, PETS_SAME) is None
    # The answer took up the customer's words: a second question after a good answer.
    good = [
        "Yes, the flat accepts pets: you can live there with cats or small dogs.",
        "Yes, you can live in the flat with a cat, pets are accepted there.",
    ]
    assert reasked("Is there parking too?", PETS_ASKED, good) is None
    # Two DIFFERENT answers: a follow-up, not the assistant going round.
    different = ["The flat has 2 bedrooms and a balcony.", "Rent is 900 a month, bills apart."]
    assert reasked("Can I visit on Friday?", PETS_ASKED, different) is None
    # Short answers are too little to call the same ("$39." twice).
    assert reasked("¿y el plan pro?", ["¿plan básico?", "¿y anual?"], ["$39.", "$39."]) is None
    # A single answer is no going round.
    assert reasked("¿dónde está mi dinero?", REFUND_ASKED, REFUND_SAME[:1]) is None


def test_a_new_question_on_the_same_order_after_it_was_answered_is_no_loop() -> None:
    asked = ["¿Dónde está mi pedido 48213?", "¿y cuándo llega?"]
    answers = [
        "Tu pedido 48213 está en camino con el transportista.",
        "Tu pedido 48213 está en camino y llega el martes con el transportista.",
    ]
    assert reasked("¿Puedo cambiar la dirección de entrega?", asked, answers) is None
    assert (
        loop_detail("¿Y si no estoy en casa?", recent_user_texts=asked, assistant_texts=answers)
        is None
    )


def test_markers_about_something_else_are_no_loop() -> None:
    for text in [
        "Misma pregunta para la tarta de fresa: ¿la hacen sin gluten?",
        "same question about the Saturday delivery, is it free?",
        "Eso me dijeron en la tienda, que abren el domingo. ¿Es así?",
        "pido el reembolso porque llegó roto por segunda vez",
    ]:
        assert _loop(text) is None, text


def test_a_remark_after_two_equal_answers_is_no_reask() -> None:
    assert reasked("ok, que bien, gracias", REFUND_ASKED, REFUND_SAME) is None
    assert reasked("vale, como digas", REFUND_ASKED, REFUND_SAME) is None


def test_answering_the_assistant_s_request_for_data_is_no_reask() -> None:
    asked = ["quiero saber de mi pedido", "lo compré el lunes"]
    answers = [
        "Para revisar el envío del pedido necesito tu número de pedido.",
        "Para revisar el envío de tu pedido indícame tu número de pedido.",
    ]
    assert reasked("es el 44120, ¿cuándo llega?", asked, answers) is None
    english = ["I want to know about my order", "I bought it on Monday"]
    answers = [
        "To check the delivery of the order I need your order number.",
        "To check your order delivery please send your order number.",
    ]
    assert reasked("it's 44120, when will it arrive?", english, answers) is None
    # The same answers without the request for data: a re-ask.
    answers = ["Orders are delivered within 5 working days.", "Orders arrive in 5 working days."]
    assert reasked("it's been 9 days, when will it arrive?", english, answers)

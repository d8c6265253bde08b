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


def test_typos_count_as_the_word_whatever_the_order_of_the_messages() -> None:
    # Typos of long words are looked for only when they could reach the threshold.
    assert similar("donde esta mi pedidio", "¿Dónde está mi pedido?")
    assert similar("¿Dónde está mi pedido?", "donde esta mi pedidio")
    assert similar("quiero cancelar la subscripcion ya", "quiero cancelar la suscripcion ya")
    assert not similar("quiero cancelar la subscripcion ya", "quiero renovar la suscripcion hoy")
    assert not similar("Los sábados abrimos de 9 a 14.", "El horario es de lunes a viernes.")
    assert similar("Los sábados abrimos de 9 a 14", "los sabados abrimos de 9 a 14 h")


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


def test_more_ways_of_saying_i_repeat_myself() -> None:
    for text in [
        "Os lo he explicado mil veces: la caja llegó abierta",
        "Les he escrito varias veces por lo mismo",
        "Le repito que el cargo es doble",
        "Nuevamente: ¿me van a mandar la pieza?",
        "Por quinta vez - ¿dónde está mi reembolso?",
        "Es la cuarta vez que le pregunto por mi factura",
        "Once again: my card was charged twice",
        "I have mentioned this like five times already",
        "i keep telling you the size is wrong",
        "As I said, the box was empty",
        "This is the third time I'm asking about my refund",
    ]:
        assert loop_detail(text, recent_user_texts=[]) is not None, text


def test_a_complaint_about_a_repeated_problem_is_not_a_loop() -> None:
    for text in [
        "Es la tercera vez que me cobran la membresía dos veces, ¿me lo arreglan?",
        "Por segunda vez me llegó la pizza fría",
        "This is the second time my parcel arrived damaged",
        "Again my order arrived late, what can I do?",
    ]:
        assert loop_detail(text, recent_user_texts=[]) is None, text


def test_the_same_complaint_in_other_words_after_two_answers() -> None:
    users = ["La impresora no imprime a color", "Ya cambié los cartuchos y sigue sin color"]
    answers = ["Revise los cartuchos.", "Compruebe que los cartuchos estén bien puestos."]
    detail = loop_detail(
        "la impresora sigue imprimiendo sin color!!",
        recent_user_texts=users,
        assistant_texts=answers,
    )
    assert detail is not None and "color" in detail
    still = ["The dryer makes a loud noise", "Cleaned the filter, the noise is there"]
    said = ["Clean the lint filter.", "Make sure the filter is clean."]
    assert loop_detail("STILL NOISY after all that", recent_user_texts=still, assistant_texts=said)
    # One earlier exchange is not enough; a new question on the same topic is no loop.
    assert (
        loop_detail(
            "¿Cuánto cuesta el plan premium?",
            recent_user_texts=["¿Cuánto cuesta el plan básico?"],
            assistant_texts=["$199"],
        )
        is None
    )
    shop = ["¿Tienen la mesa de roble?", "¿Y en nogal?"]
    replies = ["Sí, en 1,80 m.", "También, en 1,60 m."]
    assert (
        loop_detail("¿Hacen envío a Toluca?", recent_user_texts=shop, assistant_texts=replies)
        is None
    )
    shoes = ["¿tienen zapatos talla 27?", "¿en color negro?"]
    yes = ["Sí, talla 27 disponible.", "Sí, en negro también."]
    follow_up = "ok, ¿y los zapatos negros talla 27 tienen envío gratis?"
    assert loop_detail(follow_up, recent_user_texts=shoes, assistant_texts=yes) is None
    app = ["The app doesn't load", "I reinstalled"]
    tips = ["Try reinstalling.", "Now try logging out and in."]
    fixed = "ok that fixed it, the app doesn't crash anymore"
    assert loop_detail(fixed, recent_user_texts=app, assistant_texts=tips) is None


def test_counting_the_askings_and_pointing_at_the_answer_already_given() -> None:
    asked = ["¿Cuándo llega la tarjeta nueva?"]
    answered = ["Su tarjeta se envía en 5 a 7 días hábiles."]
    for text in [
        "ya van cuatro veces que escribo por lo mismo",
        "llevo 3 veces preguntando por la tarjeta",
        "When do I get my refund? Fourth time asking.",
    ]:
        assert loop_detail(text, recent_user_texts=asked) is not None, text
    for text in [
        "Eso ya me lo explicaste, pero la tarjeta no llega",
        "ya me lo dijiste como tres veces, quiero saber el día",
        "You already told me that. When does it arrive?",
        "la FECHA de entrega, es lo único que le pregunto",
        "All I'm asking is the delivery date",
    ]:
        assert loop_detail(text, recent_user_texts=asked, assistant_texts=answered), text
        # the same words in a first message, with nothing answered yet, are no loop
        if not text.startswith(("ya me", "Eso", "You")):
            assert loop_detail(text, recent_user_texts=[]) is None, text
    for text in [
        "ya me dijiste que el envío es gratis, ¿y cuánto tarda?",
        "las clases son dos veces por semana?",
        "the third time I visited the shop they were lovely",
        "lo único que quiero es un pastel de chocolate",
    ]:
        assert loop_detail(text, recent_user_texts=asked, assistant_texts=answered) is None, text


def test_saying_one_will_not_order_again_is_no_loop() -> None:
    for text in [
        "la comida llegó fría, no vuelvo a pedir con ustedes",
        "nunca vuelvo a comprar aquí",
    ]:
        assert loop_detail(text, recent_user_texts=[]) is None, text
    assert loop_detail("Le vuelvo a decir que el cobro está duplicado", recent_user_texts=[])


def test_a_short_shouted_restatement_after_two_answers_is_a_loop() -> None:
    asked = ["where is my parcel", "the parcel hasn't arrived"]
    answers = ["It is on its way.", "It is on its way and will arrive soon."]
    for text in ["PARCEL??", "parcel. where.", "WHERE. IS. MY. PARCEL."]:
        assert loop_detail(text, recent_user_texts=asked, assistant_texts=answers), text
    # the same short shout after a single answer, or new words, or thanks: no loop
    assert loop_detail("PARCEL??", recent_user_texts=asked[:1], assistant_texts=answers[:1]) is None

    def after_two(text: str) -> str | None:
        return loop_detail(text, recent_user_texts=asked, assistant_texts=answers)

    assert after_two("AND THE INVOICE??") is None
    assert after_two("GRACIAS!!") is None
    assert after_two("THE PARCEL!!") is None  # said with glee, asking nothing
    colours = ["¿tienen la camisa en rojo?", "¿y en verde?"]
    yes = ["Sí, en rojo.", "Sí, en verde."]
    assert loop_detail("¿Y EN AZUL??", recent_user_texts=colours, assistant_texts=yes) is None


def test_an_ordinal_of_asking_in_mid_sentence() -> None:
    for text in [
        "te lo digo por tercera vez: no funciona el cupón",
        "for the umpteenth time, where is it",
        "ya por enésima vez, ¿me devuelven el dinero?",
        "te lo pregunto x enésima vez cuándo llega",
    ]:
        assert loop_detail(text, recent_user_texts=[], assistant_texts=["ok"]), text
    assert loop_detail("pido por segunda vez aquí y me encanta", recent_user_texts=[]) is None


def test_a_reference_sent_again_when_the_assistant_asked_to_confirm_it() -> None:
    earlier = ["mi pedido es A1234", "hola"]
    confirm = ["¿Podrías verificar el número? No lo encuentro."]
    assert loop_detail("A1234", recent_user_texts=earlier, assistant_texts=confirm) is None
    asked_again = ["¿Cuál es tu número de pedido?"]
    assert loop_detail("A1234", recent_user_texts=earlier, assistant_texts=asked_again)

"""Grouping the unanswered questions: wordings of one question meet, another question with
words in common stays apart, greetings and punctuation do not count; texts the statement
already counted group the same."""

from __future__ import annotations

from ai_agents.selectors.stats_questions import questions_group, questions_group_counted


def test_wordings_of_one_question_meet_and_another_question_stays_apart() -> None:
    groups = questions_group(
        [
            "¿Hacen envíos a Canarias?",
            "Hola, ¿envían a Canarias?",
            "HACEN ENVIOS A CANARIAS!!",
            "¿Hacen envíos a Portugal?",
            "¿?",
        ]
    )

    assert [(g.question, g.count) for g in groups] == [
        ("¿Hacen envíos a Canarias?", 3),
        ("¿Hacen envíos a Portugal?", 1),
    ]
    assert groups[0].examples == ["HACEN ENVIOS A CANARIAS!!", "Hola, ¿envían a Canarias?"]


def test_the_most_frequent_wording_represents_its_group() -> None:
    groups = questions_group(["horario del sabado", "¿Horario del sábado?", "horario del sabado"])

    assert [(g.question, g.count, g.examples) for g in groups] == [
        ("horario del sabado", 3, ["¿Horario del sábado?"])
    ]


def test_texts_counted_in_sql_group_as_the_texts_one_by_one() -> None:
    asked = [
        "¿Envían a Canarias?",
        "hacen  envios a canarias",
        "¿Envían a Canarias?",
        "hacen envios a canarias",
        "horario del sabado",
        "¿Hacen envíos a Canarias?",
        "horario del sabado",
    ]
    counted = [(text, asked.count(text)) for text in dict.fromkeys(asked)]  # first-asked order

    one_by_one = [(g.question, g.count, g.examples) for g in questions_group(asked)]
    grouped = [(g.question, g.count, g.examples) for g in questions_group_counted(counted)]

    assert grouped == one_by_one
    assert one_by_one == [
        ("hacen envios a canarias", 5, ["¿Hacen envíos a Canarias?", "¿Envían a Canarias?"]),
        ("horario del sabado", 2, []),
    ]

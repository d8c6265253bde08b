"""The options' pure rules: what a typed reply chooses, and where a long WhatsApp answer is cut
so its last part (at most 1024 characters) carries the options."""

from __future__ import annotations

from ai_agents.channels.whatsapp.options import body_split, interactive_spec
from ai_agents.rules.options import option_chosen, option_pick, options_clean

OPTIONS = [{"id": "a", "title": "Sábado"}, {"id": "b", "title": "Domingo"}]


def test_a_number_or_a_title_chooses_and_anything_else_does_not() -> None:
    assert option_chosen("2", OPTIONS) == {"id": "b", "title": "Domingo"}
    assert option_chosen(" 1. ", OPTIONS) == {"id": "a", "title": "Sábado"}
    assert option_chosen("1)", OPTIONS) == {"id": "a", "title": "Sábado"}
    assert option_chosen("  SÁBADO ", OPTIONS) == {"id": "a", "title": "Sábado"}
    assert option_chosen("3", OPTIONS) is None
    assert option_chosen("0", OPTIONS) is None
    assert option_chosen("el sábado mejor", OPTIONS) is None
    assert option_chosen("", OPTIONS) is None


def test_a_typed_choice_carries_the_option_id_and_a_bare_number_its_title() -> None:
    """The one rule of WhatsApp, the web chat and e-mail for a typed choice."""
    assert option_pick("2", OPTIONS) == ("2 (Domingo)", {"option_id": "b"})
    assert option_pick("domingo", OPTIONS) == ("domingo", {"option_id": "b"})
    assert option_pick("3", OPTIONS) == ("3", {})
    assert option_pick("2", []) == ("2", {})
    assert option_pick("Sábado " * 20, OPTIONS) == ("Sábado " * 20, {})  # longer than a title


def test_model_output_that_is_not_a_list_of_two_gives_no_options() -> None:
    assert options_clean(None) == []
    assert options_clean("Sí, No") == []
    assert options_clean([{"title": "Sí"}]) == []
    assert options_clean([{"title": "Sí"}, {"title": "sí"}]) == []  # one choice, twice


def test_a_long_answer_is_cut_at_a_paragraph_so_the_end_fits_1024() -> None:
    assert body_split("Corto.") == ("", "Corto.")
    text = ("a" * 900) + "\n\n" + ("b" * 900)
    assert body_split(text) == ("a" * 900, "b" * 900)
    words = " ".join(["palabra"] * 400)  # 3199 characters, no sentence end
    lead, body = body_split(words)
    assert len(body) <= 1024 and f"{lead} {body}" == words
    lead, body = body_split("x" * 3000)
    assert len(body) == 1024 and lead + body == "x" * 3000


def test_titles_cut_for_a_list_stay_unique() -> None:
    options = options_clean(
        [
            {"title": "Envío urgente a domicilio en 24 horas"},
            {"title": "Envío urgente a domicilio en 48 horas"},
        ]
    )
    spec = interactive_spec(options, language="es")
    titles = [row["title"] for row in spec["action"]["sections"][0]["rows"]]
    assert len(set(titles)) == 2 and all(len(t) <= 24 for t in titles)

"""A WhatsApp template's language as the template picker names it."""

from __future__ import annotations

import pytest
from django.utils.translation import override

from ai_agents.rules.inbox_labels import template_language_label


@pytest.mark.parametrize("reader", ["es", "en"])
def test_a_template_language_is_named_in_its_own_words_with_the_code_kept(reader: str) -> None:
    with override(reader):
        assert template_language_label("en_US") == "English, en_US"
        assert template_language_label("es") == "Español, es"
        assert template_language_label("pt_BR") == "Português Brasileiro, pt_BR"
        assert template_language_label("fil") == "fil"  # unknown to Django: the code as is

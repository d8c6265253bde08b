"""The inbox search: a conversation matches when any of its messages, or its contact, does.

Message text and the contact's name and e-mail are matched as Spanish words with accents
folded (`es_unaccent`: "informacion" finds "información", "envíos" finds "envio"), through the
generated `search_vector` columns and their GIN indexes; a query with enough digits also matches
the contact's phone by digits ("612 34 56" finds "+34 612 345 678"), through a trigram index on
`phone_digits`. Only rows of the tenants asked for are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.postgres.search import SearchQuery
from django.db.models import Q

from ai_agents.models import Contact, Message
from ai_agents.models.knowledge import TS_CONFIG

QUERY_MAX_CHARS = 200
PHONE_MIN_DIGITS = 4
_PHONE_CHARS = re.compile(r"^[\d\s+().\-/]+$")
_NON_DIGITS = re.compile(r"\D")


def phone_digits_of(text: str) -> str:
    """The digits of a query that looks like (part of) a phone number; "" otherwise."""
    if not _PHONE_CHARS.match(text):
        return ""
    digits = _NON_DIGITS.sub("", text)
    return digits if len(digits) >= PHONE_MIN_DIGITS else ""


def conversation_search_condition(text: str, *, tenant_ids: Iterable[int]) -> Q:
    """The WHERE condition on conversations for the search `text` (already bounded)."""
    ids = list(tenant_ids)
    query = SearchQuery(text, config=TS_CONFIG, search_type="plain")
    messages = Message.objects.filter(
        tenant_id__in=ids,
        search_vector=query,
        role__in=[Message.Role.USER, Message.Role.ASSISTANT],
    ).values("conversation_id")
    contact_match = Q(search_vector=query)
    digits = phone_digits_of(text)
    if digits:
        contact_match |= Q(phone_digits__contains=digits)
    contacts = Contact.objects.filter(contact_match, tenant_id__in=ids).values("id")
    return Q(pk__in=messages) | Q(contact_id__in=contacts)

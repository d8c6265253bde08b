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
from typing import Any

from django.contrib.postgres.search import SearchQuery
from django.db.models import BooleanField, Exists, OuterRef, Q
from django.db.models.expressions import RawSQL

from ai_agents.models import Contact, Message
from ai_agents.models.knowledge import TS_CONFIG

QUERY_MAX_CHARS = 200
PHONE_MIN_DIGITS = 4
# At least this many matching messages make a word common (see `_messages_match`).
COMMON_WORD_MESSAGES = 1000
_PHONE_CHARS = re.compile(r"^[\d\s+().\-/]+$")
_NON_DIGITS = re.compile(r"\D")


def phone_digits_of(text: str) -> str:
    """The digits of a query that looks like (part of) a phone number; "" otherwise."""
    if not _PHONE_CHARS.match(text):
        return ""
    digits = _NON_DIGITS.sub("", text)
    return digits if len(digits) >= PHONE_MIN_DIGITS else ""


def conversation_search_condition(text: str, *, tenant_ids: Iterable[int]) -> Q:
    """The WHERE condition on conversations for the search `text` (already bounded), for a
    list that stops after a page of cards."""
    ids = list(tenant_ids)
    query = SearchQuery(text, config=TS_CONFIG, search_type="plain")
    contacts = Contact.objects.filter(
        _contact_match(text, query), tenant_id__in=ids, id=OuterRef("contact_id")
    )
    return _messages_match(text, query, ids) | Q(Exists(contacts))


def conversation_search_sets(text: str, *, tenant_ids: Iterable[int]) -> Q:
    """The same matches as sets found once through the GIN and trigram indexes: suits a count
    over a whole tab (the list's condition probes conversation by conversation)."""
    ids = list(tenant_ids)
    query = SearchQuery(text, config=TS_CONFIG, search_type="plain")
    messages = _searched_messages(query).filter(tenant_id__in=ids).values("conversation_id")
    contacts = Contact.objects.filter(_contact_match(text, query), tenant_id__in=ids).values("id")
    return Q(pk__in=messages) | Q(contact_id__in=contacts)


def _contact_match(text: str, query: SearchQuery) -> Q:
    """The contact's name or e-mail as words, or its phone by digits."""
    match = Q(search_vector=query)
    digits = phone_digits_of(text)
    if digits:
        match |= Q(phone_digits__contains=digits)
    return match


def _searched_messages(query: SearchQuery) -> Any:
    """Customer and bot/staff messages matching `query` (never system rows)."""
    return Message._base_manager.filter(
        search_vector=query, role__in=[Message.Role.USER, Message.Role.ASSISTANT]
    )


def _messages_match(text: str, query: SearchQuery, ids: list[int]) -> Q:
    """Some message of the conversation matches, tested the way that suits the word.

    A rare word: collect its few messages through the GIN index once (a hashed set). A common
    word: probe the conversations in list order (`conv_tenant_last`), each through its own
    messages, and stop when the page is full; hashing its thousands of hits would cost far
    more. Which one: how many messages of these tenants the GIN index finds, counted up to
    COMMON_WORD_MESSAGES (a bounded count). The planner alone guesses the common case wrong.
    """
    # Counted through the GIN index alone (no tenant test the planner could prefer to walk);
    # row-level security limits it to the tenants in scope.
    hits = Message._base_manager.filter(search_vector=query).order_by()
    if hits[:COMMON_WORD_MESSAGES].count() < COMMON_WORD_MESSAGES:
        # No tenant test in the subquery: its messages are tied to a conversation row already
        # limited to `ids` (and row-level security holds); a tenant test would offer the
        # planner the tenant's index, walking every message of the tenant.
        return Q(Exists(_searched_messages(query).filter(conversation_id=OuterRef("pk"))))
    # OFFSET 0 keeps PostgreSQL from turning the EXISTS into a hashed set: one probe a row,
    # through the conversation's messages; `(... @@ ...) IS TRUE` keeps it from also looking
    # the word up in the GIN index at every probe.
    probe = RawSQL(
        "EXISTS (SELECT 1 FROM ai_agents_message m WHERE m.conversation_id = "
        "\"ai_agents_conversation\".\"id\" AND m.role IN ('user', 'assistant') AND "
        "(m.search_vector @@ plainto_tsquery(%s::regconfig, %s)) IS TRUE OFFSET 0)",
        [TS_CONFIG, text],
        output_field=BooleanField(),
    )
    return Q(probe)

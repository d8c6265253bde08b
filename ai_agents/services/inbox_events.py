"""Live inbox events: `inbox_event_publish` tells open inbox pages that a conversation changed.

A no-op placeholder with the agreed signature (issue 16): the live-updates transport (Redis
pub/sub, server-sent events) replaces this module; callers already call it where they change a
conversation. Best effort: it never raises.
"""

from __future__ import annotations

KINDS = frozenset({"message", "status", "assignment", "note", "typing", "delivery", "rating"})


def inbox_event_publish(*, tenant_id: int, conversation_id: object, kind: str) -> None:
    """Announces that `conversation_id` changed (`kind` in KINDS); does nothing yet."""
    return None

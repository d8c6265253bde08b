"""Live inbox events: the one function any code that changes a conversation calls.

A placeholder with the agreed signature (issue 16's contract): the live-updates transport
(Redis pub/sub, server-sent events) replaces the body. Best effort by contract: never raises.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

KINDS = frozenset({"message", "status", "assignment", "note", "typing", "delivery", "rating"})


def inbox_event_publish(*, tenant_id: Any, conversation_id: Any, kind: str) -> None:
    """Tells the staff pages that `kind` changed on this conversation (no-op here)."""
    logger.debug(
        "inbox.event",
        extra={"tenant_id": tenant_id, "conversation_id": str(conversation_id), "kind": kind},
    )

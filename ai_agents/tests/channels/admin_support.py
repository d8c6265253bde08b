"""The admin's channel form (`/admin/ai_agents/channelbinding/`) as a browser posts it."""

from __future__ import annotations

from typing import Any


def channel_admin_form(agent_id: Any, **fields: str) -> dict[str, str]:
    """A binding of the agent `agent_id`, active, every channel's field empty but `fields`."""
    return {
        "agent": str(agent_id),
        "name": "",
        "is_active": "on",
        "phone_number_id": "",
        "access_token": "",
        "whatsapp_template": "{}",
        "address": "",
        "allowed_origins": "",
        **fields,
    }

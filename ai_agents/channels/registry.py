"""Imports the channel modules so they register their adapters (see `adapter_for`)."""

from ai_agents.channels.email import adapter as _email  # noqa: F401
from ai_agents.channels.whatsapp import adapter as _whatsapp  # noqa: F401

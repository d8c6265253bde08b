"""Imports the channel modules so they register their adapters (see `adapter_for`)."""

from ai_agents.channels import email, whatsapp  # noqa: F401

"""Imports the channel modules so they register their adapters (see `adapter_for`)."""

import importlib

for _name in ("whatsapp", "email"):
    try:
        importlib.import_module(f"ai_agents.channels.{_name}")
    except ModuleNotFoundError as exc:  # pragma: no cover - while a channel is not built yet
        if exc.name != f"ai_agents.channels.{_name}":
            raise

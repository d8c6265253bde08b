"""Pure units of the message pipeline (no database access): text, intent, escalation, history,
prompt, limits."""

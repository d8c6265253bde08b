"""Pure units of the conversation engine (no database access): text, intent, escalation,
history, prompt, validation."""

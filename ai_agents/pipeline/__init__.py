"""Pure units of the message pipeline (no database access): text, intent, escalation, history,
prompt. Input bounds live in ai_agents.rules.input_bound, rate limits in erp.ratelimit."""

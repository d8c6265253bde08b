"""The conversation engine's limits (per conversation, per tenant, message size)."""

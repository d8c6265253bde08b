"""Input bounds: how much of one customer message the engine works with, per channel.

`input_bound(text, channel)` cuts a customer message to the characters the engine uses of it
(`INPUT_MAX_CHARS`, per channel) before any expensive work: trigger matching, the query
embedding, full-text search, the prompt. The stored message stays whole.
"""

from __future__ import annotations

# Characters of one customer message the pipeline works with, per channel. REST and web chat
# refuse longer texts (400), e-mail keeps the first 8,000 of the body; WhatsApp cannot refuse a
# message (Meta would redeliver it for days), so its text is cut at its own 4,096 (the limit
# WhatsApp gives a text message). The history of earlier messages is cut the same way.
INPUT_MAX_CHARS: dict[str, int] = {"api": 8000, "webchat": 4000, "email": 8000, "whatsapp": 4096}
INPUT_MAX_CHARS_DEFAULT = 4000  # channels registered without a limit of their own


def input_max_chars(channel: str) -> int:
    return INPUT_MAX_CHARS.get(channel, INPUT_MAX_CHARS_DEFAULT)


def input_bound(text: str, channel: str) -> tuple[str, int | None]:
    """`text` cut to the channel's limit, and its full length when it was cut (else None)."""
    limit = input_max_chars(channel)
    if len(text) <= limit:
        return text, None
    return text[:limit], len(text)

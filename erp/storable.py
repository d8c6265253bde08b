"""Text PostgreSQL can store.

PostgreSQL rejects NUL (U+0000) in `text` and `jsonb`, and a lone UTF-16 surrogate (U+D800 to
U+DFFF: JSON's `"\\ud800"`, or an undecodable byte Python's e-mail parser kept as
`surrogateescape`) cannot be encoded as UTF-8 at all. Both arrive from customers' devices and
mail servers; refusing them would lose a customer's message (and a provider would redeliver it
forever), so inbound text is cleaned once at the boundary: each such character becomes U+FFFD,
the visible "replacement character".
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD (the same object when clean)."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def unstorable(text: str) -> bool:
    """True when `text` holds NUL or a lone surrogate: staff input with them is refused (400)
    rather than silently changed."""
    return _UNSTORABLE.search(text) is not None


def unstorable_message() -> str:
    return _(
        "El texto contiene caracteres que no se pueden guardar: bórrelos y vuelva a escribirlo."
    )


def storable(value: Any) -> Any:
    """A JSON-like value (str, dict, list, tuple, scalars) with every string, keys included,
    made storable."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value

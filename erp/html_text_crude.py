"""The last resort of `erp.html_text`: text without tags, in one linear pass, for HTML nested too
deep to parse cheaply or that the parser refused. Structure beyond line breaks is lost and hidden
text is not recognised, but it never raises and never takes more than linear time.
"""

from __future__ import annotations

import html as html_lib
import re

# Every pattern below scans each character a bounded number of times (no `.*?` to a closing
# tag that may never come): the crude strip must stay linear on hostile input.
_FALLBACK_SKIPPED = re.compile(r"<(script|style|head|template)\b|<!--", re.I)
_FALLBACK_BREAKS = re.compile(
    r"<(?:br|/?(?:p|div|tr|li|h[1-6]|table|ul|ol|blockquote|pre|hr))\b[^<>]*>", re.I
)
_FALLBACK_TAGS = re.compile(r"<[^<>]*>")


def crude_text(html: str) -> str:
    """Text without tags, comments, scripts and styles, in one linear pass (no structure kept
    beyond line breaks, hidden text not recognised)."""
    lowered = html.lower()
    pieces: list[str] = []
    position = 0
    while True:
        match = _FALLBACK_SKIPPED.search(html, position)
        if match is None:
            pieces.append(html[position:])
            break
        pieces.append(html[position : match.start()])
        name = match.group(1)
        end_marker = "-->" if name is None else f"</{name.lower()}"
        end = lowered.find(end_marker, match.end())
        if end < 0:
            break  # never closed: the rest is not text, as in a browser
        position = end + len(end_marker)
        if name is not None:
            close = html.find(">", position)
            position = len(html) if close < 0 else close + 1
        pieces.append(" ")
    text = _FALLBACK_BREAKS.sub("\n", "".join(pieces))
    return html_lib.unescape(_FALLBACK_TAGS.sub(" ", text))

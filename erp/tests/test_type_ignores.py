"""Every `type: ignore` left in `erp` and `ai_agents` names its error codes and says why.

A bare `# type: ignore` silences every error on its line, today's and tomorrow's; one with codes
but no reason leaves the next reader to rediscover why the checker is wrong there. The form is
`# type: ignore[code]  # reason`, the reason on the same line (mypy runs in CI, `make typecheck`,
and reports an ignore that no longer silences anything). Read, not run: file:line per violation.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
ROOTS = ("erp", "ai_agents")  # [tool.mypy] files in pyproject.toml

IGNORE = re.compile(r"type:\s*ignore")
# The codes in brackets, then a second comment of at least one word: the reason.
WELL_FORMED = re.compile(r"type:\s*ignore\[[a-z-]+(?:\s*,\s*[a-z-]+)*\]\s+#\s*\w")


def problems_in(source: str) -> list[tuple[int, str]]:
    """(line, message) for each comment with a `type: ignore` that lacks codes or a reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT or not IGNORE.search(token.string):
            continue
        if not WELL_FORMED.search(token.string):
            found.append((token.start[0], token.string.strip()))
    return found


def test_every_type_ignore_names_its_codes_and_its_reason() -> None:
    found = []
    for root in ROOTS:
        for path in sorted((BASE_DIR / root).rglob("*.py")):
            for line, comment in problems_in(path.read_text(encoding="utf-8")):
                found.append(f"{path.relative_to(BASE_DIR)}:{line}: {comment}")

    assert found == [], "write `# type: ignore[code]  # why`:\n" + "\n".join(found)


def test_the_check_tells_a_reasoned_ignore_from_a_bare_or_silent_one() -> None:
    source = (
        "a = 1  # type: ignore[misc]  # Celery's Task is untyped\n"
        "b = 2  # type: ignore[attr-defined, union-attr]  # set by the middleware\n"
        "c = 3  # type: ignore\n"
        "d = 4  # type: ignore[misc]\n"
        "e = 5  # type: ignore[misc]  #\n"
        "f = '# type: ignore'  # a string, not a comment\n"
    )

    assert [line for line, _ in problems_in(source)] == [3, 4, 5]

"""Accessibility check for browser tests: axe-core (vendored under `vendor/axe-core`, from the
npm package; never fetched) run inside the page under test.

`axe_check(page)` injects axe, runs it on the whole document and returns the serious and
critical violations, each as "rule: help (n nodes: first selectors)", so an assertion shows what
is wrong and where.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE_JS = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Every violation axe finds on the page (its JSON: id, impact, help, nodes...)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    result = page.evaluate(
        "async () => { const r = await axe.run(document, {resultTypes: ['violations']});"
        " return r.violations; }"
    )
    return list(result)


def axe_check(page: Any) -> list[str]:
    """The serious and critical violations, readable; [] when there are none."""
    found = []
    for violation in axe_violations(page):
        if violation.get("impact") not in BLOCKING:
            continue
        targets = [_selector(node.get("target", [])) for node in violation.get("nodes", [])]
        found.append(
            f"{violation['id']} ({violation['impact']}): {violation['help']}"
            f" ({len(targets)} nodes: {'; '.join(targets[:3])})"
        )
    return found


def _selector(target: list[Any]) -> str:
    """axe's target: a list of selectors; inside a shadow root, a list of lists (host first)."""
    return ", ".join(" >> ".join(t) if isinstance(t, list) else str(t) for t in target)

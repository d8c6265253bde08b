"""A suite that cannot lie: a test that did not run fails the run unless the allowlist says why.

pytest exits 0 when tests are skipped, so a missing browser, a module that failed to import
behind `importorskip`, or a `skipif` whose condition went stale would pass CI silently. This
plugin (loaded from pyproject's `addopts`) turns every skip and xfail of a test into a failure
of that test, unless one line of the allowlist (`.ci/skip-allowlist.txt`, the ini option
`skip_allowlist`) names it:

    <node id, node id prefix or fnmatch pattern> | <why it may be skipped>

A module skipped while it is collected cannot be turned into a failing test; it is listed at
the end and the run exits non-zero. `ERP_ALLOW_SKIPS=1` relaxes this for a local run: the skips
are still listed, the exit status is pytest's own.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

DEFAULT_ALLOWLIST = ".ci/skip-allowlist.txt"
RELAX_ENV = "ERP_ALLOW_SKIPS"


@dataclass(frozen=True)
class Entry:
    pattern: str
    reason: str

    def matches(self, nodeid: str) -> bool:
        return (
            nodeid == self.pattern
            or nodeid.startswith((f"{self.pattern}::", f"{self.pattern}["))
            or fnmatch.fnmatchcase(nodeid, self.pattern)
        )


@dataclass
class Guard:
    allowlist_path: Path
    entries: list[Entry]
    strict: bool
    allowed: list[tuple[str, str, Entry]] = field(default_factory=list)
    unlisted: list[tuple[str, str]] = field(default_factory=list)

    def entry_for(self, nodeid: str) -> Entry | None:
        return next((entry for entry in self.entries if entry.matches(nodeid)), None)


GUARD = pytest.StashKey[Guard]()


def allowlist_parse(text: str, *, source: str) -> list[Entry]:
    """The entries of an allowlist file; a line without a pattern or a reason is an error."""
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, _bar, reason = (part.strip() for part in line.partition("|"))
        if not pattern or not reason:
            raise pytest.UsageError(
                f"{source}:{number}: expected '<node id or pattern> | <reason>', got {raw!r}"
            )
        entries.append(Entry(pattern, reason))
    return entries


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "skip_allowlist",
        "file listing the tests that may be skipped, one '<node id or pattern> | <reason>' a line",
        default=DEFAULT_ALLOWLIST,
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.rootpath / str(config.getini("skip_allowlist"))
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    config.stash[GUARD] = Guard(
        allowlist_path=path,
        entries=allowlist_parse(text, source=str(path)),
        strict=os.environ.get(RELAX_ENV, "") not in {"1", "true", "yes"},
    )


def _skip_reason(report: Any) -> str:
    if getattr(report, "wasxfail", None) is not None:
        return f"xfail: {report.wasxfail}"
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, Any]:
    report = yield
    guard = item.config.stash.get(GUARD, None)
    if guard is None or not report.skipped:
        return report
    reason = _skip_reason(report)
    entry = guard.entry_for(item.nodeid)
    if entry is not None:
        guard.allowed.append((item.nodeid, reason, entry))
        return report
    guard.unlisted.append((item.nodeid, reason))
    if guard.strict:
        report.outcome = "failed"
        report.longrepr = (
            f"{reason}\nThis test did not run, and {guard.allowlist_path.name} does not list it.\n"
            f"Make it run, or add '<node id> | <reason>' to {guard.allowlist_path}."
        )
        if hasattr(report, "wasxfail"):
            del report.wasxfail  # else pytest still counts it as xfailed
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    guard = collector.config.stash.get(GUARD, None)
    if guard is not None and report.skipped:
        entry = guard.entry_for(report.nodeid)
        if entry is not None:
            guard.allowed.append((report.nodeid, _skip_reason(report), entry))
        else:
            guard.unlisted.append((report.nodeid, _skip_reason(report)))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    guard = session.config.stash.get(GUARD, None)
    if guard is not None and guard.strict and guard.unlisted and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    guard = config.stash.get(GUARD, None)
    if guard is None or not (guard.unlisted or guard.allowed):
        return
    write = terminalreporter.write_line
    terminalreporter.section("tests that did not run")
    for nodeid, reason in guard.unlisted:
        write(f"NOT ALLOWED {nodeid}: {reason}")
    for nodeid, reason, entry in guard.allowed:
        write(f"allowed     {nodeid}: {reason} (allowlist: {entry.reason})")
    if guard.unlisted:
        verdict = "fail the run" if guard.strict else f"are tolerated ({RELAX_ENV}=1)"
        write(
            f"{len(guard.unlisted)} unlisted skip(s) {verdict}; allowlist: {guard.allowlist_path}"
        )

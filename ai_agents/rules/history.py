"""Conversation history truncation (the agent's `history_config`, RN-2).

`truncate_history(items, strategy=..., max_messages=..., token_budget=..., summary=...)`:

- `oldest_first`: the last `max_messages` items.
- `summarize`: a summary item of everything older + the last `max_messages - 1` items.
- `smart`: the first item, a summary of the middle, the last
  `max_messages - 2` items.
  With `len(items) <= max_messages` nothing is cut by count.

The summary is the system item `[Resumen de conversación anterior: <summary>]`. When `summary` is
None and something was cut, no summary item is added and `needs_summary_of` lists the cut items
(oldest first) so the caller can summarise them (and cache the summary keyed by the last cut
message); with a summary given, it is assumed to cover `dropped` and `needs_summary_of` is empty.
`oldest_first` never asks for a summary.

Tool calls: an assistant item carrying `tool_call_id` and the `role="tool"` result(s) with the
same id form one unit; units are kept or dropped whole, so a call is never separated from its
result (the kept tail may then be shorter than N). A tool result whose call is not in `items`
at all (an orphan) is dropped.

Token budget (`token_budget`, items' `tokens` or `estimate_tokens(content)`): the oldest units of
the kept tail are dropped first (never the newest unit), then the summary item, then the first
item, until the total fits. All removed items end up in `dropped`, in original order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from django.utils.translation import gettext as _

from ai_agents.knowledge.chunking import estimate_tokens

Strategy = Literal["oldest_first", "summarize", "smart"]
STRATEGIES: tuple[str, ...] = ("oldest_first", "summarize", "smart")


@dataclass(frozen=True)
class HistoryItem:
    role: str  # user | assistant | system | tool
    content: str
    tool_call_id: str | None = None
    tokens: int | None = None
    message_id: str | None = None  # the stored message, to key a cached summary
    at: datetime | None = None  # when it was sent (the model sees it before the text)
    outcome: str | None = None  # the stored reply's metadata.outcome (e.g. "no_answer")

    def token_count(self) -> int:
        return self.tokens if self.tokens is not None else estimate_tokens(self.content)


@dataclass(frozen=True)
class TruncatedHistory:
    items: list[HistoryItem]
    dropped: list[HistoryItem] = field(default_factory=list)
    needs_summary_of: list[HistoryItem] = field(default_factory=list)


def summary_item(summary: str) -> HistoryItem:
    return HistoryItem(
        role="system",
        content=_("[Resumen de conversación anterior: %(summary)s]") % {"summary": summary},
    )


def _units(items: Sequence[HistoryItem]) -> tuple[list[list[int]], set[int]]:
    """Indexes grouped into units (tool call + results together), and orphan tool results."""
    calls = {i.tool_call_id for i in items if i.role != "tool" and i.tool_call_id}
    orphans = {n for n, i in enumerate(items) if i.role == "tool" and i.tool_call_id not in calls}
    last_seen: dict[str, int] = {}
    for n, item in enumerate(items):
        if item.tool_call_id and n not in orphans:
            last_seen[item.tool_call_id] = n
    units: list[list[int]] = []
    reach = -1  # the unit under construction extends at least to this index
    for n, item in enumerate(items):
        if n in orphans:
            continue
        if units and n <= reach:
            units[-1].append(n)
        else:
            units.append([n])
        if item.tool_call_id:
            reach = max(reach, last_seen[item.tool_call_id])
    return units, orphans


def _tail(units: list[list[int]], limit: int) -> list[list[int]]:
    """The newest whole units holding at most `limit` items (at least the newest unit)."""
    kept: list[list[int]] = []
    count = 0
    for unit in reversed(units):
        if kept and count + len(unit) > limit:
            break
        kept.insert(0, unit)
        count += len(unit)
    return kept


def _cut_by_count(
    units: list[list[int]], *, live: int, strategy: Strategy, max_messages: int
) -> tuple[list[int], list[list[int]], list[int]]:
    """(first item's indexes, kept tail units, indexes cut from the middle) by message count."""
    if live <= max_messages:
        if strategy == "smart":
            return units[0], units[1:], []
        return [], list(units), []
    first: list[int] = []
    rest = units
    if strategy == "oldest_first":
        tail = _tail(units, max_messages)
    elif strategy == "summarize":
        tail = _tail(units, max(max_messages - 1, 1))
    else:
        first, rest = units[0], units[1:]
        tail = _tail(rest, max(max_messages - 2, 1)) if rest else []
    cut = [n for unit in rest[: len(rest) - len(tail)] for n in unit]
    return first, tail, cut


def _fit_budget(
    items: Sequence[HistoryItem],
    *,
    kept: tuple[list[int], list[list[int]], list[HistoryItem]],
    token_budget: int | None,
) -> tuple[list[int], list[list[int]], list[HistoryItem], list[int]]:
    """Drop the oldest tail units, then the summary, then the first item until the tokens fit.

    `kept` is (first, tail, summary_block); returns them trimmed plus the indexes dropped.
    """
    first, tail, summary_block = kept[0], list(kept[1]), kept[2]
    budget_cut: list[int] = []
    if token_budget is None:
        return first, tail, summary_block, budget_cut

    def total() -> int:
        indexes = [*first, *(n for u in tail for n in u)]
        return sum(items[n].token_count() for n in indexes) + sum(
            s.token_count() for s in summary_block
        )

    while total() > token_budget:
        if len(tail) > 1:
            budget_cut.extend(tail.pop(0))
        elif summary_block:
            summary_block = []
        elif first and tail:
            budget_cut.extend(first)
            first = []
        else:
            break
    return first, tail, summary_block, budget_cut


def truncate_history(
    items: Sequence[HistoryItem],
    *,
    strategy: Strategy,
    max_messages: int,
    token_budget: int | None,
    summary: str | None,
) -> TruncatedHistory:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown truncation strategy: {strategy!r}")
    if max_messages < 1:
        raise ValueError("max_messages must be >= 1")
    units, orphans = _units(items)
    if not units:
        return TruncatedHistory(items=[], dropped=[items[n] for n in sorted(orphans)])

    first, tail, cut = _cut_by_count(
        units, live=len(items) - len(orphans), strategy=strategy, max_messages=max_messages
    )
    summary_block = (
        [summary_item(summary)]
        if summary is not None and cut and strategy != "oldest_first"
        else []
    )
    first, tail, summary_block, budget_cut = _fit_budget(
        items, kept=(first, tail, summary_block), token_budget=token_budget
    )

    kept_idx = [*first, *(n for u in tail for n in u)]
    out = [items[n] for n in first]
    out += summary_block
    out += [items[n] for u in tail for n in u]
    dropped_idx = sorted(set(range(len(items))) - set(kept_idx))
    removed_middle = sorted({*cut, *budget_cut} - set(first))
    needs = (
        [items[n] for n in removed_middle] if summary is None and strategy != "oldest_first" else []
    )
    return TruncatedHistory(
        items=out, dropped=[items[n] for n in dropped_idx], needs_summary_of=needs
    )

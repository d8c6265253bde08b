"""The state of one message being answered, and its typed outcome."""

from __future__ import annotations

import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from erp.llm.types import LlmResult
from erp.llm.usage import cost_usd


class Timer:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.last = self.started
        self.steps: dict[str, int] = {}

    def mark(self, name: str, *, within: Mapping[str, int] | None = None) -> None:
        """The time since the last mark is `name`'s, less the parts measured `within` it
        (recorded as their own steps: the tools run between the model's calls)."""
        now = time.monotonic()
        spent = int((now - self.last) * 1000)
        for part, ms in (within or {}).items():
            self.steps[part] = ms
            spent -= ms
        self.steps[name] = max(spent, 0)
        self.last = now

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


class Spent:
    """Tokens and cost of this message's successful model calls (failed attempts cost 0;
    the gateway's usage rows hold every attempt)."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = Decimal("0")
        self.calls = 0

    def add(self, result: LlmResult) -> None:
        self.calls += 1
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cost += cost_usd(
            provider=result.provider,
            model=result.model,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": f"{self.cost:.6f}",
        }

import pytest

from ai_agents.rules.history import HistoryItem, summary_item, truncate_history


def convo(n: int, tokens: int | None = 10) -> list[HistoryItem]:
    return [
        HistoryItem(role="user" if i % 2 == 0 else "assistant", content=f"m{i}", tokens=tokens)
        for i in range(n)
    ]


def contents(items: list[HistoryItem]) -> list[str]:
    return [i.content for i in items]


def test_short_history_is_untouched() -> None:
    items = convo(5)
    for strategy in ("oldest_first", "summarize", "smart"):
        result = truncate_history(
            items, strategy=strategy, max_messages=20, token_budget=None, summary=None
        )
        assert result.items == items and result.dropped == [] and result.needs_summary_of == []


def test_oldest_first_keeps_last_n() -> None:
    items = convo(25)
    result = truncate_history(
        items, strategy="oldest_first", max_messages=20, token_budget=None, summary=None
    )
    assert contents(result.items) == [f"m{i}" for i in range(5, 25)]
    assert contents(result.dropped) == [f"m{i}" for i in range(5)]
    assert result.needs_summary_of == []


def test_smart_requests_summary_of_the_middle() -> None:
    items = convo(25)
    result = truncate_history(
        items, strategy="smart", max_messages=10, token_budget=None, summary=None
    )
    assert contents(result.items) == ["m0"] + [f"m{i}" for i in range(17, 25)]
    assert contents(result.needs_summary_of) == [f"m{i}" for i in range(1, 17)]
    assert result.dropped == result.needs_summary_of


def test_smart_with_given_summary() -> None:
    items = convo(25)
    result = truncate_history(
        items, strategy="smart", max_messages=10, token_budget=None, summary="pidió precios"
    )
    assert result.items[0].content == "m0"
    assert result.items[1] == summary_item("pidió precios")
    assert result.items[1].role == "system" and "pidió precios" in result.items[1].content
    assert "Resumen de conversación anterior" in result.items[1].content
    assert contents(result.items[2:]) == [f"m{i}" for i in range(17, 25)]
    assert result.needs_summary_of == []
    assert len(result.items) == 10


def test_summarize_strategy() -> None:
    items = convo(12)
    result = truncate_history(
        items, strategy="summarize", max_messages=5, token_budget=None, summary="s"
    )
    assert result.items[0].role == "system"
    assert contents(result.items[1:]) == ["m8", "m9", "m10", "m11"]
    pending = truncate_history(
        items, strategy="summarize", max_messages=5, token_budget=None, summary=None
    )
    assert contents(pending.needs_summary_of) == [f"m{i}" for i in range(8)]


def tool_convo() -> list[HistoryItem]:
    return [
        HistoryItem("user", "u0"),
        HistoryItem("assistant", "a1"),
        HistoryItem("user", "u2"),
        HistoryItem("assistant", "call", tool_call_id="t1"),
        HistoryItem("tool", "result", tool_call_id="t1"),
        HistoryItem("assistant", "a5"),
        HistoryItem("user", "u6"),
    ]


def test_tool_call_never_separated_from_result() -> None:
    items = tool_convo()
    # last 3 would be [result, a5, u6]: the result alone must not survive
    result = truncate_history(
        items, strategy="oldest_first", max_messages=3, token_budget=None, summary=None
    )
    assert contents(result.items) == ["a5", "u6"]
    result = truncate_history(
        items, strategy="oldest_first", max_messages=4, token_budget=None, summary=None
    )
    assert contents(result.items) == ["call", "result", "a5", "u6"]


def test_parallel_tool_calls_form_one_unit() -> None:
    items = [
        HistoryItem("user", "u0"),
        HistoryItem("assistant", "c1", tool_call_id="x"),
        HistoryItem("assistant", "c2", tool_call_id="y"),
        HistoryItem("tool", "r1", tool_call_id="x"),
        HistoryItem("tool", "r2", tool_call_id="y"),
        HistoryItem("user", "u5"),
    ]
    result = truncate_history(
        items, strategy="oldest_first", max_messages=4, token_budget=None, summary=None
    )
    assert contents(result.items) == ["u5"]
    result = truncate_history(
        items, strategy="oldest_first", max_messages=5, token_budget=None, summary=None
    )
    assert contents(result.items) == ["c1", "c2", "r1", "r2", "u5"]


def test_orphan_tool_result_is_dropped() -> None:
    items = [HistoryItem("tool", "lost", tool_call_id="gone"), HistoryItem("user", "hola")]
    result = truncate_history(
        items, strategy="oldest_first", max_messages=20, token_budget=None, summary=None
    )
    assert contents(result.items) == ["hola"]
    assert contents(result.dropped) == ["lost"]


def test_token_budget_drops_oldest_middle_first() -> None:
    items = convo(8, tokens=100)
    result = truncate_history(
        items, strategy="smart", max_messages=20, token_budget=450, summary=None
    )
    assert contents(result.items) == ["m0", "m5", "m6", "m7"]
    assert contents(result.dropped) == ["m1", "m2", "m3", "m4"]
    assert sum(i.token_count() for i in result.items) <= 450


def test_token_budget_then_summary_then_first_but_never_newest() -> None:
    items = convo(6, tokens=100)
    result = truncate_history(
        items, strategy="smart", max_messages=4, token_budget=150, summary="x" * 400
    )
    assert contents(result.items) == ["m5"]
    tiny = truncate_history(
        items, strategy="oldest_first", max_messages=4, token_budget=1, summary=None
    )
    assert contents(tiny.items) == ["m5"]


def test_token_budget_keeps_tool_unit_whole() -> None:
    items = [HistoryItem(i.role, i.content, i.tool_call_id, tokens=10) for i in tool_convo()]
    result = truncate_history(
        items, strategy="oldest_first", max_messages=20, token_budget=35, summary=None
    )
    assert contents(result.items) == ["a5", "u6"]


def test_estimated_tokens_when_missing() -> None:
    items = [HistoryItem("user", "palabra " * 100), HistoryItem("user", "hola")]
    result = truncate_history(
        items, strategy="oldest_first", max_messages=20, token_budget=50, summary=None
    )
    assert contents(result.items) == ["hola"]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        truncate_history([], strategy="random", max_messages=5, token_budget=None, summary=None)  # type: ignore[arg-type]  # the invalid value under test
    with pytest.raises(ValueError):
        truncate_history([], strategy="smart", max_messages=0, token_budget=None, summary=None)
    assert (
        truncate_history(
            [], strategy="smart", max_messages=5, token_budget=None, summary=None
        ).items
        == []
    )


def test_summary_item_with_tool_units_never_separates_a_call_from_its_result() -> None:
    items = tool_convo()
    for strategy in ("summarize", "smart"):
        for limit in (3, 4, 5):
            result = truncate_history(
                items, strategy=strategy, max_messages=limit, token_budget=None, summary="s"
            )
            kept = contents(result.items)
            assert ("call" in kept) == ("result" in kept), (strategy, limit, kept)
            assert result.items[0 if strategy == "summarize" else 1] == summary_item("s")
            assert result.needs_summary_of == []

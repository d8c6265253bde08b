"""The inbox list page at scale: what `/inbox/` does per request over 100,000 messages.

    .venv/bin/python bench/inbox_list_page.py [--messages 100000] [--conversations 5000]
                                              [--rounds 20] [--smoke]

Loads the same two tenants as `bench/inbox_search.py` (its loaders: contacts, conversations,
messages by COPY, VACUUM ANALYZE) in a scratch database it creates and drops (`_harness`), then
times, as the application's role (row-level security on) and scoped to tenant A, the work of
one list page: the page of 25 cards (`inbox_page_read`: the tab's query plus the five tab
counts under the same filters and search), the filter choices, the card fields and the cards
template, in Spanish. Request kinds: each tab without search, the waiting tab with a common
word, an accent-less word and a contact's name, a search with a channel filter, and the
second page ("cargar más") of the bot tab; and what `/inbox/waiting` does (the title count
and the alerts' rows, which every open inbox page re-reads on each live event). Prints P50/P95
per kind of the time in the database (every statement, results received) and of the whole
call, and the machine's load average.
`--smoke`: a tiny size, seconds (the suite runs it so the bench cannot rot).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")

import django

django.setup()

from _harness import assert_scratch, connect_as_app_role, percentile, scratch_database  # noqa: E402
from django.db import connection  # noqa: E402
from inbox_search import _copy_messages, _load_tenant, fold  # noqa: E402  (its loaders)

PAGE = 25
ALERTS = "alerts: /inbox/waiting"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000, help="messages in all")
    parser.add_argument("--conversations", type=int, default=5_000, help="in all")
    parser.add_argument("--rounds", type=int, default=20, help="requests per kind")
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.conversations, args.rounds = 600, 40, 2
    with scratch_database("bench_inbox_list"):
        run(args)


def _requests(loaded: dict[str, Any], rng: random.Random) -> list[tuple[str, dict[str, str]]]:
    name = fold(rng.choice(loaded["contacts"]).name)
    return [
        ("waiting tab", {"tab": "waiting"}),
        ("mine tab", {"tab": "mine"}),
        ("unassigned tab", {"tab": "unassigned"}),
        ("bot tab", {"tab": "bot"}),
        ("closed tab", {"tab": "closed"}),
        ("search: common word", {"q": "pedido"}),
        ("search: accent-less", {"q": "informacion devolucion"}),
        ("search: contact name", {"q": name}),
        ("search + channel", {"q": "envio", "channel": "whatsapp", "tab": "closed"}),
    ]


def _page(tenant_id: int, params: dict[str, str]) -> int:
    """The list view's work for one request, minus HTTP: cards, counts, choices, template."""
    from django.template.loader import render_to_string

    from ai_agents.inbox.cards import cards_fields
    from ai_agents.selectors.inbox_page import inbox_filter_choices, inbox_page_read

    page = inbox_page_read(params=params, tenant_ids=(tenant_id,), user_id=1, limit=PAGE)
    inbox_filter_choices(tenant_ids=(tenant_id,))
    html = render_to_string(
        "ai_agents/inbox/_cards.html", {"cards": cards_fields(page.cards), "many_tenants": False}
    )
    return html.count("inbox-card ")


def _alerts(tenant_id: int) -> int:
    """`/inbox/waiting`'s work minus HTTP: the waiting tab's count and the alerts' rows."""
    from ai_agents.inbox.alerts import _waiting_body, waiting_rows

    count, rows = waiting_rows([tenant_id], user_id=1)
    return len(_waiting_body(count, rows)["conversations"])


def _timed(work: Callable[[], int]) -> tuple[float, float, int]:
    spent = [0.0]

    def wrapper(execute: Any, sql: str, sql_params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, sql_params, many, context)
        finally:
            spent[0] += (time.perf_counter() - t0) * 1000

    with connection.execute_wrapper(wrapper):
        t0 = time.perf_counter()
        cards = work()
        whole = (time.perf_counter() - t0) * 1000
    return spent[0], whole, cards


def _load(args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    started = time.perf_counter()
    per_tenant = args.conversations // 2
    loaded_a = _load_tenant("bench-a", per_tenant, rng)
    _copy_messages(loaded_a, args.messages // 2, rng)
    loaded_b = _load_tenant("bench-b", per_tenant, rng)
    _copy_messages(loaded_b, args.messages - args.messages // 2, rng)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(
        f"loaded {args.messages} messages over {2 * per_tenant} conversations "
        f"(two tenants) in {time.perf_counter() - started:.1f} s"
    )
    return loaded_a


def run(args: argparse.Namespace) -> None:
    from django.utils import translation

    from ai_agents.selectors.inbox_page import inbox_page_read
    from erp.tenancy.scoping import tenant_scope

    rng = random.Random(16)
    assert_scratch()
    loaded = _load(args, rng)
    connect_as_app_role()
    tenant = loaded["tenant"]
    requests = _requests(loaded, rng)
    in_db: dict[str, list[float]] = {}
    whole: dict[str, list[float]] = {}
    shown: dict[str, int] = {}
    with tenant_scope(tenant), translation.override("es"):
        first = inbox_page_read(params={"tab": "bot"}, tenant_ids=(tenant.pk,), user_id=1)
        if first.next_cursor:
            requests.append(("bot tab, page 2", {"tab": "bot", "after": first.next_cursor}))
        works: list[tuple[str, Callable[[], int]]] = [
            (kind, lambda params=params: _page(tenant.pk, dict(params)))
            for kind, params in requests
        ]
        works.append((ALERTS, lambda: _alerts(tenant.pk)))
        for _kind, work in works:  # warm-up
            work()
        for _ in range(args.rounds):
            for kind, work in works:
                database, elapsed, cards = _timed(work)
                in_db.setdefault(kind, []).append(database)
                whole.setdefault(kind, []).append(elapsed)
                shown[kind] = cards
    for kind, values in whole.items():
        db = in_db[kind]
        print(
            f"{kind:>22}: database P50 {statistics.median(db):6.1f} ms, "
            f"P95 {percentile(db, 0.95):6.1f} ms; whole page work P50 "
            f"{statistics.median(values):6.1f} ms, P95 {percentile(values, 0.95):6.1f} ms "
            f"({shown[kind]} cards)"
        )
    every = [t for kind, values in whole.items() if kind != ALERTS for t in values]
    print(
        f"all kinds, whole page work (cards + 5 tab counts + filter choices + template): "
        f"P50 {statistics.median(every):.1f} ms, P95 {percentile(every, 0.95):.1f} ms "
        f"over {len(every)} requests"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average during the run: {load} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()

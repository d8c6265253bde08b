"""Inbox search at scale: the conversation list's search query over 100,000 messages.

    .venv/bin/python bench/inbox_search.py [--messages 100000] [--conversations 5000]
                                           [--queries 40] [--smoke]

Creates a uniquely named scratch database on the configured server (DATABASE_URL, or the
embedded PostgreSQL under var/), migrates it, loads two tenants (contacts and conversations
through the ORM, messages with COPY as the owner), runs VACUUM ANALYZE, then times, as the
application's role (row-level security on) and scoped to tenant A, the search behind
`GET /api/v1/conversations?q=` (`conversation_list(...)` with its card annotations, first page
of 50): the time its SQL statements take (the bounded count that picks the plan, and the page
query, results received: the per-kind and overall figures), and the whole Python call
(building the queryset, the statements, loading the rows); then drops the database; it
refuses to write anywhere else (`_harness`). `--smoke`: a tiny size, seconds (the suite runs
it so the bench cannot rot). The machine's load average is printed with the figures.

Texts: customer and agent messages drawn from Spanish and English support phrases (orders,
deliveries, invoices, returns...), with accented words, and one product code in about one
message out of 500. Query kinds: a rare word (a product code), a common word ("pedido"), the
accent-less form of an accented word ("informacion", "devolucion"), phone digits (part of a
contact's number) and a contact's name typed without accents.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import time
import unicodedata
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")

import django

django.setup()

from _harness import assert_scratch, connect_as_app_role, percentile, scratch_database  # noqa: E402
from django.db import connection  # noqa: E402

FIRST = ["María", "José", "Lucía", "Ángel", "Sofía", "Iñaki", "Raúl", "Inés", "John", "Emma"]
FIRST += ["Jesús", "Begoña", "Óscar", "Noemí", "Peter", "Laura", "Martín", "Andrés", "Ana"]
LAST = ["Pérez", "Núñez", "García", "Martínez", "Gómez", "Sánchez", "Muñoz", "Jiménez", "Ruiz"]
LAST += ["Smith", "Brown", "Fernández", "Díaz", "Álvarez", "Romero", "Castaño", "Ibáñez"]
CUSTOMER = [
    "Hola, mi pedido {n} todavía no ha llegado, ¿me pueden ayudar?",
    "Quiero información sobre la devolución de un producto defectuoso.",
    "¿Cuánto tarda el envío a {city}? Lo necesito antes del viernes.",
    "No encuentro la factura del pedido {n}, ¿me la pueden reenviar?",
    "El repartidor dejó el paquete en la portería y no aparece.",
    "¿Tienen descuento para clientes habituales? Compro cada mes.",
    "Me cobraron dos veces el mismo pedido, revisen mi tarjeta por favor.",
    "Hi, my order {n} has not arrived yet, can you check the tracking?",
    "I would like a refund, the size was wrong and the colour too.",
    "Where can I download the invoice for last month's purchase?",
    "Necesito cambiar la dirección de entrega, me mudé la semana pasada.",
    "¿Puedo pagar contra reembolso o solo con tarjeta?",
    "La aplicación no me deja iniciar sesión desde el móvil.",
]
ASSISTANT = [
    "Gracias por escribirnos. Reviso el estado del pedido {n} ahora mismo.",
    "Le envío la información sobre devoluciones: tiene 30 días desde la entrega.",
    "El envío a {city} tarda entre 24 y 72 horas laborables.",
    "Le he reenviado la factura a su correo electrónico.",
    "Thanks for reaching out, I am checking the tracking number for you.",
    "Your refund has been requested; it usually takes 5 to 7 business days.",
    "He actualizado la dirección de entrega del pedido.",
    "Lamentamos las molestias; un compañero revisará el cobro duplicado.",
]
CITIES = ["Canarias", "Málaga", "Bilbao", "Córdoba", "Valencia", "León", "Cádiz", "Ávila"]
KINDS = ("rare word", "common word", "accent-less", "phone digits", "contact name")


def fold(text: str) -> str:
    return "".join(
        c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn"
    ).lower()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000, help="messages in all")
    parser.add_argument("--conversations", type=int, default=5_000, help="in all")
    parser.add_argument("--queries", type=int, default=40, help="per query kind")
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    parser.add_argument("--explain", action="store_true", help="print one plan per kind")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.conversations, args.queries = 600, 40, 3
    with scratch_database("bench_inbox"):
        run(args)


def _load_tenant(slug: str, conversations: int, rng: random.Random) -> dict[str, Any]:
    """Tenant, agent, contacts and conversations through the ORM; returns what the messages
    and the queries need."""
    from ai_agents.models import Agent, Contact, Conversation
    from erp.tenancy.models import Tenant
    from erp.tenancy.scoping import tenant_scope

    tenant = Tenant.objects.create(slug=slug, name=slug)
    statuses = ["active"] * 5 + ["closed"] * 3 + ["escalated", "expired"]
    with tenant_scope(tenant):
        agent = Agent.objects.create(tenant=tenant, name="Bench", system_prompt="Eres Bench.")
        contacts = [
            Contact(
                tenant=tenant,
                external_id=f"{slug}-{i}",
                name=f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                phone=f"+34 6{rng.randrange(10):d}{rng.randrange(10):d} "
                f"{rng.randrange(1000):03d} {rng.randrange(1000):03d}",
                email=f"cliente{i}@{slug}.test" if i % 3 else "",
            )
            for i in range(conversations)
        ]
        Contact.objects.bulk_create(contacts, batch_size=2000)
        rows = [
            Conversation(
                tenant=tenant,
                agent=agent,
                channel=rng.choice(["whatsapp", "webchat", "email"]),
                channel_conversation_id=f"{slug}-{i}",
                contact=contacts[i],
                contact_identifier=f"{slug}-{i}",
                status=rng.choice(statuses),
            )
            for i in range(conversations)
        ]
        Conversation.objects.bulk_create(rows, batch_size=2000)
    return {"tenant": tenant, "agent": agent, "contacts": contacts, "conversations": rows}


def _copy_messages(loaded: dict[str, Any], count: int, rng: random.Random) -> list[str]:
    """COPY `count` messages over the tenant's conversations (as the owner); the product codes
    used (the rare words)."""
    columns = "id, tenant_id, conversation_id, agent_id, role, content, metadata, "
    columns += "delivery_status, created_at"
    start = datetime(2026, 1, 1, tzinfo=UTC)
    codes: list[str] = []
    buf = io.StringIO()
    conversations = loaded["conversations"]
    for i in range(count):
        conversation = conversations[i % len(conversations)]
        user = (i // len(conversations)) % 2 == 0
        text = rng.choice(CUSTOMER if user else ASSISTANT).format(
            n=rng.randrange(10_000, 99_999), city=rng.choice(CITIES)
        )
        if rng.random() < 0.002:
            code = f"PX{rng.randrange(100_000, 999_999)}"
            codes.append(code)
            text += f" Es el modelo {code}."
        when = start + timedelta(minutes=i)
        buf.write(
            f"{uuid.uuid4()}\t{loaded['tenant'].pk}\t{conversation.pk}\t{loaded['agent'].pk}\t"
            f"{'user' if user else 'assistant'}\t{text}\t{{}}\t\t{when.isoformat()}\n"
        )
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY ai_agents_message ({columns}) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cursor.execute(
            "UPDATE ai_agents_conversation c SET last_message_at = m.last, "
            "started_at = m.first, message_count = m.n FROM (SELECT conversation_id, "
            "max(created_at) AS last, min(created_at) AS first, count(*) AS n "
            "FROM ai_agents_message GROUP BY conversation_id) m WHERE m.conversation_id = c.id"
        )
        # Escalated after their first messages, the customer's last word unanswered by a
        # person: what the inbox's waiting tab lists (and the title counts).
        cursor.execute(
            "UPDATE ai_agents_conversation c SET escalated_at = c.started_at + interval '1 minute',"
            " last_inbound_at = m.last FROM (SELECT conversation_id, max(created_at) AS last"
            " FROM ai_agents_message WHERE role = 'user' GROUP BY conversation_id) m"
            " WHERE m.conversation_id = c.id AND c.status = 'escalated'"
        )
    return codes


def _queries(loaded: dict[str, Any], codes: list[str], n: int, rng: random.Random) -> list[Any]:
    contacts = loaded["contacts"]
    words = ["pedido", "order", "envío", "factura"]
    accentless = ["informacion", "devolucion", "envio", "direccion", "cadiz", "malaga"]
    out = []
    for i in range(n):
        phone = rng.choice(contacts).phone.replace(" ", "")
        cut = rng.randrange(3, len(phone) - 7)
        out += [
            ("rare word", codes[i % len(codes)] if codes else "PX000000"),
            ("common word", words[i % len(words)]),
            ("accent-less", accentless[i % len(accentless)]),
            ("phone digits", phone[cut : cut + 7]),
            ("contact name", fold(rng.choice(contacts).name)),
        ]
    return out


def _explain(tenant_id: int, queries: list[Any]) -> None:
    rows = dict(queries)
    for kind, text in rows.items():
        print(f"--- {kind}: {text!r}")
        print(_rows(tenant_id, text).explain(analyze=True, buffers=True))


def _rows(tenant_id: int, text: str) -> Any:
    from ai_agents.selectors.conversations import (
        conversation_filters_parse,
        conversation_list,
        conversation_ordering,
    )

    filters = conversation_filters_parse({"q": text}, tenant_ids=(tenant_id,))
    rows = conversation_list(filters=filters, user_id=1)
    return rows.order_by(*conversation_ordering(filters))[:51]


def _search(tenant_id: int, text: str) -> int:
    """The whole call as the API makes it: build the queryset, run it, load the cards' rows."""
    return len(list(_rows(tenant_id, text)))


def _timed(tenant_id: int, text: str) -> tuple[float, float, int]:
    """(ms in the database: every SQL statement of the call, results received; ms of the
    whole call; rows)."""
    spent = [0.0]

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent[0] += (time.perf_counter() - t0) * 1000

    with connection.execute_wrapper(wrapper):
        t0 = time.perf_counter()
        rows = _search(tenant_id, text)
        whole = (time.perf_counter() - t0) * 1000
    return spent[0], whole, rows


def run(args: argparse.Namespace) -> None:
    from erp.tenancy.scoping import tenant_scope

    rng = random.Random(16)
    assert_scratch()
    started = time.perf_counter()
    per_tenant = args.conversations // 2
    loaded_a = _load_tenant("bench-a", per_tenant, rng)
    codes = _copy_messages(loaded_a, args.messages // 2, rng)
    loaded_b = _load_tenant("bench-b", per_tenant, rng)
    _copy_messages(loaded_b, args.messages - args.messages // 2, rng)
    with connection.cursor() as cursor:  # the steady state autovacuum keeps: GIN lists merged
        cursor.execute("VACUUM ANALYZE")
    print(
        f"loaded {args.messages} messages over {2 * per_tenant} conversations "
        f"(two tenants) in {time.perf_counter() - started:.1f} s"
    )
    connect_as_app_role()  # searched as the web process does: row-level security on
    tenant = loaded_a["tenant"]
    queries = _queries(loaded_a, codes, args.queries, rng)
    timings: dict[str, list[float]] = {kind: [] for kind in KINDS}
    found: dict[str, int] = dict.fromkeys(KINDS, 0)
    whole: list[float] = []
    with tenant_scope(tenant):
        for _kind, text in queries[:10]:  # warm-up
            _search(tenant.pk, text)
        if args.explain:
            _explain(tenant.pk, queries)
        for kind, text in queries:
            in_database, elapsed, hits = _timed(tenant.pk, text)
            timings[kind].append(in_database)
            whole.append(elapsed)
            found[kind] += bool(hits)
    every = [t for values in timings.values() for t in values]
    for kind in KINDS:
        values = timings[kind]
        print(
            f"{kind:>13}: P50 {statistics.median(values):6.1f} ms, "
            f"P95 {percentile(values, 0.95):6.1f} ms ({found[kind]}/{len(values)} found)"
        )
    print(
        f"search, all kinds: P50 {statistics.median(every):.1f} ms, "
        f"P95 {percentile(every, 0.95):.1f} ms over {len(every)} queries (goal: P95 < 50 ms)"
    )
    print(
        f"the whole call (ORM build + query + 50 card rows loaded): "
        f"P50 {statistics.median(whole):.1f} ms, P95 {percentile(whole, 0.95):.1f} ms"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average during the run: {load} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()

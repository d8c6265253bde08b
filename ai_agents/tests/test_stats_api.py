"""`GET /api/v1/stats` and its CSV exports against a week whose answers are worked out by hand
(ai_agents/tests/stats_helpers.py), the filters, the 400s, and two tenants."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from ai_agents.models import Conversation
from ai_agents.tests.handoff_helpers import agent_for
from ai_agents.tests.stats_helpers import PERIOD, stats_week
from erp.llm.models import ChannelPrice, ModelPrice
from erp.llm.pricing import channel_charge_record
from erp.llm.usage import usage_record
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db

URL = "/api/v1/stats"


def _csv(response: Any) -> list[list[str]]:
    text = b"".join(response.streaming_content).decode("utf-8").lstrip("\ufeff")
    return list(csv.reader(io.StringIO(text)))


def test_the_week_by_hand(api_a: Any, owner: Persona) -> None:
    stats_week(owner.tenant, owner.user)

    body = api_a.get(URL, PERIOD).json()

    # c1..c6 and c8 (23:30 local on the 7th is 05:30 UTC on the 8th); not c7 (10th), nor c9.
    assert body["conversations"] == 7
    assert body["messages"] == 16  # 2 each, c4 and c5 3 (the staff reply); not c1's system note
    assert body["resolved_by_ai"] == 2  # c1, c6 (c7 came 96 h later); c2 reopened by c3
    assert body["ai_resolution_rate"] == 0.2857
    assert body["escalated"] == 2
    assert [(r["reason"], r["count"]) for r in body["escalations_by_reason"]] == [
        ("low_confidence", 1),
        ("user_request", 1),
    ]
    assert (
        body["escalations_by_reason"][0]["label"] == "El asistente no estaba seguro de la respuesta"
    )
    # Bot: 500, 1000, 2000, 3000, 4000, 6000, 10000 ms -> p50 3000; p90 6000 + 0.4 * 4000.
    assert body["first_response_ms"]["bot"] == {"p50": 3000, "p90": 7600, "count": 7}
    # People: 120 s and 300 s -> p50 210 s; p90 120 + 0.9 * 180 = 282 s.
    assert body["first_response_ms"]["people"] == {"p50": 210000, "p90": 282000, "count": 2}
    assert body["csat"] == {"average": 4.0, "responses": 3}
    assert body["cost_usd"] == "0.080000"  # not c7's 0.100 nor the 0.500 of embeddings
    assert body["cost_per_conversation_usd"] == "0.011429"
    assert body["cost_per_resolved_usd"] == "0.040000"
    assert body["unanswered_questions"] == [
        {
            "question": "¿Hacen envíos a Canarias?",
            "count": 3,
            "examples": ["Hacen envios a Canarias", "¿Envían a Canarias?"],
        },
        {"question": "¿Cuál es el horario del sábado?", "count": 1, "examples": []},
    ]
    days = {d["day"]: d for d in body["per_day"]}
    assert len(days) == 7
    assert days["2026-03-01"]["conversations"] == 0
    assert days["2026-03-02"] == {
        "day": "2026-03-02",
        "conversations": 2,
        "escalated": 0,
        "resolved_by_ai": 1,
    }
    assert days["2026-03-07"]["conversations"] == 1
    assert body["timezone"] == "America/Mexico_City"


def test_a_whole_year_reads_the_cost_in_one_pass_with_the_same_definitions(
    api_a: Any, owner: Persona
) -> None:
    stats_week(owner.tenant, owner.user)

    body = api_a.get(URL, {"from": "2025-03-10", "to": "2026-03-10"}).json()  # 366 days

    assert body["conversations"] == 9  # the week's seven, c7 and c9
    assert body["messages"] == 20
    assert body["cost_usd"] == "0.180000"  # c7's 0.100 now in; never the 0.500 of embeddings
    assert body["resolved_by_ai"] == 2  # c1, c6 (c7, 96 h later, does not reopen it)
    assert body["first_response_ms"]["bot"]["count"] == 9
    assert body["first_response_ms"]["people"] == {"p50": 210000, "p90": 282000, "count": 2}
    assert len(body["per_day"]) == 366


def test_filters_by_agent_and_channel(api_a: Any, owner: Persona) -> None:
    week = stats_week(owner.tenant, owner.user)

    bruno = api_a.get(URL, {**PERIOD, "agent": str(week["agent_b"].pk)}).json()
    whatsapp = api_a.get(URL, {**PERIOD, "channel": "whatsapp"}).json()

    assert (bruno["conversations"], bruno["messages"], bruno["resolved_by_ai"]) == (2, 5, 1)
    assert bruno["escalated"] == 1
    assert bruno["cost_usd"] == "0.015000"
    assert bruno["cost_per_resolved_usd"] == "0.015000"
    assert (whatsapp["conversations"], whatsapp["escalated"], whatsapp["resolved_by_ai"]) == (
        2,
        2,
        0,
    )
    assert whatsapp["cost_usd"] == "0.045000"
    assert whatsapp["cost_per_resolved_usd"] is None
    assert whatsapp["unanswered_questions"][0]["question"] == "¿Cuál es el horario del sábado?"


def test_the_cost_per_resolved_counts_transcription_and_channel_messages(
    api_a: Any, owner: Persona
) -> None:
    """The week's model rows plus a voice note's transcription and two billed WhatsApp
    messages, written by the ledger's own functions: `cost_per_resolved_usd` is all of it
    over the conversations the AI resolved (c1, c6)."""
    week = stats_week(owner.tenant, owner.user)
    c4, c5 = week["c4"], week["c5"]
    ModelPrice.objects.update_or_create(
        provider="google",
        model="priced-model",
        defaults={"input_per_million_usd": Decimal("1"), "output_per_million_usd": Decimal("3")},
    )
    ChannelPrice.objects.update_or_create(  # the latest rate for MX utility messages
        channel="whatsapp",
        country="MX",
        category="utility",
        valid_from=timezone.now().date(),
        defaults={"price_usd": Decimal("0.0125")},
    )
    usage_record(  # 600 input tokens at 1 USD per million: 0.0006
        tenant=owner.tenant,
        operation="transcription",
        provider="google",
        model="priced-model",
        input_tokens=600,
        conversation_id=c4.pk,
    )
    for n, conversation in enumerate((c4, c5)):
        channel_charge_record(
            tenant=owner.tenant,
            charge_key=f"whatsapp:stats-{n}",
            channel="whatsapp",
            phone="+52 55 1234 5678",
            category="utility",
            conversation_id=conversation.pk,
        )

    body = api_a.get(URL, PERIOD).json()
    bruno = api_a.get(URL, {**PERIOD, "agent": str(week["agent_b"].pk)}).json()

    model, transcription, channel = Decimal("0.080"), Decimal("0.0006"), 2 * Decimal("0.0125")
    total = model + transcription + channel  # 0.1056
    assert body["cost_usd"] == f"{total:.6f}" == "0.105600"
    assert body["cost_per_resolved_usd"] == f"{total / 2:.6f}" == "0.052800"
    assert body["cost_per_conversation_usd"] == f"{total / 7:.6f}" == "0.015086"
    # Bruno: c5's 0.015 of the model and its one message, over c6 resolved
    assert bruno["cost_per_resolved_usd"] == f"{Decimal('0.015') + Decimal('0.0125'):.6f}"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2026-02-30"}, "from"),
        ({"from": "03/01/2026"}, "from"),
        ({"from": "2026-03-08", "to": "2026-03-01"}, "from"),
        ({"from": "2025-01-01", "to": "2026-03-01"}, "from"),
        ({"from": "9999-12-31", "to": "9999-12-31"}, "from"),
        ({"to": "0001-01-01"}, "to"),
        ({"agent": "no-es-un-id"}, "agent"),
        ({"agent": "00000000-0000-0000-0000-000000000001"}, "agent"),
        ({"channel": "telegram"}, "channel"),
    ],
)
def test_bad_parameters_are_400(api_a: Any, params: dict[str, str], field: str) -> None:
    response = api_a.get(URL, params)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["fields"]


def test_csv_exports(api_a: Any, owner: Persona) -> None:
    stats_week(owner.tenant, owner.user)

    figures = _csv(api_a.get(URL, {**PERIOD, "format": "csv"}))
    rows = _csv(api_a.get(f"{URL}/conversations.csv", PERIOD))

    values = {row[0]: row[1] for row in figures if len(row) == 2}
    assert values["conversations"] == "7"
    assert values["resolved_by_ai"] == "2"
    assert values["first_response_ms_bot_p90"] == "7600"
    assert values["cost_per_resolved_usd"] == "0.040000"
    assert ["unanswered_question", "¿Hacen envíos a Canarias?", "3"] in figures
    assert ["2026-03-02", "2", "0", "1"] in figures
    assert rows[0][:4] == ["id", "started_at", "closed_at", "status"]
    assert [row[4] for row in rows[1:]] == [
        "webchat",
        "webchat",
        "webchat",
        "whatsapp",
        "whatsapp",
        "email",
        "webchat",
    ]
    assert rows[1][1] == "2026-03-02T10:00:00-06:00"  # the tenant's zone


def test_a_formula_in_a_question_is_quoted_in_the_csv(api_a: Any, owner: Persona) -> None:
    week = stats_week(owner.tenant, owner.user)
    Conversation.objects.for_tenant(owner.tenant).filter(pk=week["c5"].pk).update(
        contact_identifier="=HYPERLINK(1)"
    )

    rows = _csv(api_a.get(f"{URL}/conversations.csv", PERIOD))

    assert "'=HYPERLINK(1)" in [row[6] for row in rows]


def test_another_tenant_sees_only_its_own(api_b: Any, owner: Persona, outsider: Persona) -> None:
    week = stats_week(owner.tenant, owner.user)
    theirs = stats_week(outsider.tenant, outsider.user)
    Conversation.objects.for_tenant(outsider.tenant).filter(pk=theirs["c1"].pk).delete()

    body = api_b.get(URL, PERIOD).json()
    foreign_agent = api_b.get(URL, {**PERIOD, "agent": str(week["agent_a"].pk)})
    rows = _csv(api_b.get(f"{URL}/conversations.csv", PERIOD))

    assert body["conversations"] == 6
    assert foreign_agent.status_code == 400  # another tenant's agent is as unknown as none
    assert str(week["c1"].pk) not in {row[0] for row in rows}
    assert len(rows) == 7


def test_a_member_of_two_tenants_sees_each_under_its_tenant(
    owner: Persona, outsider: Persona, client: Any
) -> None:
    stats_week(owner.tenant, owner.user)
    agent_for(outsider.tenant)
    MembershipFactory.create(tenant=outsider.tenant, user=owner.user, role=Membership.Role.ADMIN)
    client.force_login(owner.user)

    acme = client.get(URL, PERIOD, HTTP_X_TENANT=owner.tenant.slug).json()
    globex = client.get(URL, PERIOD, HTTP_X_TENANT=outsider.tenant.slug).json()

    assert acme["conversations"] == 7
    assert globex["conversations"] == 0
    assert globex["unanswered_questions"] == []
    assert globex["cost_per_conversation_usd"] is None


def test_no_credentials_is_refused(client: Any) -> None:
    assert client.get(URL, PERIOD).status_code in (401, 403)

"""What a channel charges per message, and the ledger row for each billable message sent.

The price is the `ChannelPrice` row for the channel, the recipient's country (from the
E.164 number, longest calling-code prefix) and the message's category, with the latest
`valid_from` not after the day of the send; a country without rows costs the "*" row's.
One row per billable message: `charge_key` (e.g. "whatsapp:<delivery id>") is unique per
tenant and the insert does nothing on a second try, so retries and redeliveries bill once.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

from django.utils import timezone

from erp.llm.budget import spend_add
from erp.llm.conversation_cost import conversation_cost_statement
from erp.llm.models import ChannelPrice, Operation, UsageLog
from erp.tenancy import rows
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope

ANY_COUNTRY = "*"

# E.164 calling code -> ISO country. Shared codes go to the largest market (+1: US, +7: RU)
# unless a longer prefix says otherwise; an unknown code is priced as "*".
CALLING_CODES: dict[str, str] = {
    "1": "US", "1787": "PR", "1939": "PR", "1809": "DO", "1829": "DO", "1849": "DO",
    "7": "RU", "20": "EG", "27": "ZA", "30": "GR", "31": "NL", "32": "BE", "33": "FR",
    "34": "ES", "39": "IT", "40": "RO", "41": "CH", "43": "AT", "44": "GB", "45": "DK",
    "46": "SE", "47": "NO", "48": "PL", "49": "DE", "51": "PE", "52": "MX", "53": "CU",
    "54": "AR", "55": "BR", "56": "CL", "57": "CO", "58": "VE", "60": "MY", "61": "AU",
    "62": "ID", "63": "PH", "64": "NZ", "65": "SG", "66": "TH", "81": "JP", "82": "KR",
    "84": "VN", "86": "CN", "90": "TR", "91": "IN", "92": "PK", "234": "NG", "351": "PT",
    "353": "IE", "358": "FI", "380": "UA", "502": "GT", "503": "SV", "504": "HN", "505": "NI",
    "506": "CR", "507": "PA", "591": "BO", "593": "EC", "595": "PY", "598": "UY", "966": "SA",
    "971": "AE", "972": "IL",
}  # fmt: skip
_LONGEST = max(len(code) for code in CALLING_CODES)


def phone_country(phone: str) -> str:
    """The ISO country of an E.164 number ("+52 55…", "5255…"); "*" when unknown."""
    digits = "".join(ch for ch in phone if ch.isdigit())
    for length in range(min(_LONGEST, len(digits)), 0, -1):
        country = CALLING_CODES.get(digits[:length])
        if country is not None:
            return country
    return ANY_COUNTRY


def channel_price(*, channel: str, country: str, category: str, on: dt.date) -> Decimal:
    """USD for one message; 0 when the table has no row for the country nor for "*"."""
    candidates = ChannelPrice.objects.filter(
        channel=channel, category=category, country__in={country, ANY_COUNTRY}, valid_from__lte=on
    ).values_list("country", "price_usd", "valid_from")
    best: tuple[bool, dt.date, Decimal] | None = None
    for row_country, price, valid_from in candidates:
        rank = (row_country == country, valid_from, price)
        if best is None or rank[:2] > best[:2]:
            best = rank
    return best[2] if best is not None else Decimal("0")


def channel_charge_record(
    *,
    tenant: Tenant,
    charge_key: str,
    channel: str,
    phone: str,
    category: str,
    agent_id: uuid.UUID | None = None,
    conversation_id: uuid.UUID | None = None,
    message_id: uuid.UUID | None = None,
) -> bool:
    """Writes the ledger row of one billable message sent (operation "channel_message",
    provider the channel, model "<country>/<category>"); False, and nothing new, when
    `charge_key` was billed already. Run now, never deferred: whether the row is new decides
    whether the cached month spend grows."""
    now = timezone.now()
    country = phone_country(phone)
    price = channel_price(channel=channel, country=country, category=category, on=now.date())
    log = UsageLog(
        tenant=tenant,
        operation=Operation.CHANNEL_MESSAGE.value,
        provider=channel,
        model=f"{country}/{category}",
        cost_usd=price,
        agent_id=agent_id,
        conversation_id=conversation_id,
        message_id=message_id,
        charge_key=charge_key,
        created_at=now,
    )
    sql, params = rows.insert_statement([log])
    # Added to the conversation's cost only when the row was inserted (not a duplicate); the
    # statement returns a row exactly then.
    sql = conversation_cost_statement(f"{sql} ON CONFLICT DO NOTHING", then="SELECT 1 FROM ins")
    # A channel's charge is Meta's bill, not the AI credit: no debit, only the ledger row.
    with tenant_scope(tenant):
        [outcome] = rows.run_together([(sql, params)])
    inserted = bool(outcome.rows)
    if inserted and price:
        spend_add(tenant=tenant, cost_usd=price)
    return inserted

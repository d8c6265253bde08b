"""WhatsApp's `service` messages (free-form replies inside the 24-hour window), billable since
2026-10-01, are priced like the market's `utility` messages on the rate card of that date: in
every row of it we could read (a third-party copy of its AED edition: Argentina, Bangladesh,
Brazil, Chile, Colombia, Egypt) `service` equals `utility`. The 0004 seed had lower example
figures for `service`: each seed `service` row still at its 0004 value (not edited in the
admin since) takes its country's seed `utility` figure. The seed's figures stay examples to
check against Meta's card (see 0004 and the README).
"""

import datetime
from decimal import Decimal
from typing import Any

from django.db import migrations

VALID_FROM = datetime.date(2026, 10, 1)  # 0004's seed rows
# country: (the 0004 seed's service figure, its utility figure), USD per message
SEED = {
    "ES": ("0.0100", "0.0200"),
    "MX": ("0.0050", "0.0085"),
    "AR": ("0.0100", "0.0260"),
    "CO": ("0.0010", "0.0010"),
    "CL": ("0.0100", "0.0200"),
    "PE": ("0.0100", "0.0200"),
    "US": ("0.0030", "0.0040"),
    "BR": ("0.0050", "0.0068"),
    "*": ("0.0080", "0.0100"),
}
SERVICE, UTILITY = 0, 1


def _rows(apps: Any, country: str) -> Any:
    price = apps.get_model("llm", "ChannelPrice")
    return price.objects.filter(
        channel="whatsapp", country=country, category="service", valid_from=VALID_FROM
    )


def service_like_utility(apps: Any, schema_editor: Any) -> None:
    for country, values in SEED.items():
        _rows(apps, country).filter(price_usd=Decimal(values[SERVICE])).update(
            price_usd=Decimal(values[UTILITY])
        )


def service_back(apps: Any, schema_editor: Any) -> None:
    for country, values in SEED.items():
        _rows(apps, country).filter(price_usd=Decimal(values[UTILITY])).update(
            price_usd=Decimal(values[SERVICE])
        )


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0005_voice_usage_operations"),
    ]

    operations = [
        migrations.RunPython(service_like_utility, service_back),
    ]

"""Issue 15: the default escalation triggers and intents no longer fire on a single ambiguous
word ("humano", "agente", "persona"): the request-for-a-person detector (`user_request`) and
loop detection take their place. Agents whose stored blocks still EQUAL the old defaults get
the new ones; customised blocks are left alone. Reversible (the old defaults come back only
where the new ones are still untouched). The values are frozen here: later changes to the
defaults need a migration of their own."""

import json
from typing import Any

from django.db import migrations

from erp.tenancy.scoping import all_tenants

_TRADES = [
    "agente de envios",
    "agente de envio",
    "agente de ventas",
    "agente de viajes",
    "agente inmobiliario",
    "agente inmobiliaria",
    "agente aduanal",
    "agente aduanero",
    "agente de aduanas",
    "agente de seguros",
    "agente de bienes raices",
    "agente de transito",
    "agente de policia",
    "agente de carga",
    "agente comercial",
    "agente de cambio",
    "persona fisica",
    "persona moral",
    "persona juridica",
]
_TAIL = [
    {"type": "intent", "condition": {"intents": ["escalate"]}, "priority": "medium"},
    {"type": "sentiment", "condition": {"threshold": -0.6}, "priority": "high"},
    {"type": "confidence", "condition": {"threshold": 0.3}, "priority": "low"},
]
OLD_TRIGGERS = [
    {
        "type": "keyword",
        "condition": {
            "keywords": ["humano", "agente", "persona", "hablar con alguien"],
            "exclude": _TRADES,
        },
        "priority": "medium",
    },
    {"type": "user_request", "condition": {}, "priority": "medium"},
    *_TAIL,
]
NEW_TRIGGERS = [
    {"type": "user_request", "condition": {}, "priority": "medium"},
    {
        "type": "loop_detection",
        "condition": {"max_similar": 2, "window": 10, "similarity": 0.8, "min_words": 3},
        "priority": "medium",
    },
    *_TAIL,
]
_OTHER_INTENTS = [
    {"intent": "order_status", "keywords": ["pedido", "orden", "envío", "dónde está"]},
    {"intent": "pricing", "keywords": ["precio", "costo", "cuánto cuesta", "cotización"]},
    {"intent": "support", "keywords": ["ayuda", "problema", "no funciona", "error"]},
]
OLD_INTENTS = {
    "mode": "hybrid",
    "intents": [
        {
            "intent": "escalate",
            "keywords": ["humano", "agente", "persona", "hablar con alguien"],
            "exclude": _TRADES,
            "description": "Usuario quiere hablar con persona",
            "examples": ["Quiero hablar con un humano", "Pásame con un agente"],
            "action": "trigger_escalation",
        },
        *_OTHER_INTENTS,
    ],
}
NEW_INTENTS = {
    "mode": "hybrid",
    "intents": [
        {
            "intent": "escalate",
            "keywords": [],
            "exclude": _TRADES,
            "description": "Usuario quiere hablar con persona",
            "examples": [
                "Quiero hablar con un humano",
                "¿Me pasas con facturación?",
                "Que me llame el encargado",
                "I'd like to speak to someone in billing",
            ],
            "action": "trigger_escalation",
        },
        *_OTHER_INTENTS,
    ],
}


def _replace(schema_editor: Any, column: str, old: Any, new: Any) -> None:
    with all_tenants(), schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT set_config('app.all_tenants', 'on', true)")
        cursor.execute(
            f"UPDATE ai_agents_agent SET {column} = %s::jsonb WHERE {column} = %s::jsonb",
            [json.dumps(new), json.dumps(old)],
        )


def forwards(apps: Any, schema_editor: Any) -> None:
    _replace(schema_editor, "escalation_triggers", OLD_TRIGGERS, NEW_TRIGGERS)
    _replace(schema_editor, "intent_detection", OLD_INTENTS, NEW_INTENTS)


def backwards(apps: Any, schema_editor: Any) -> None:
    _replace(schema_editor, "escalation_triggers", NEW_TRIGGERS, OLD_TRIGGERS)
    _replace(schema_editor, "intent_detection", NEW_INTENTS, OLD_INTENTS)


class Migration(migrations.Migration):
    dependencies = [("ai_agents", "0014_translated_labels")]

    operations = [migrations.RunPython(forwards, backwards)]

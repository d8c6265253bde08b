"""What the fault tests and the benches send as Meta would, and what their fake model answers:
one WhatsApp text message webhook in Meta's wire form, its signature, and the agent's answer.

One builder for all of them, so a change of the payload's shape (or of how the webhook checks
the signature) is made once. The WhatsApp tests use recorded payloads instead
(`ai_agents/tests/channels/whatsapp/fixtures`), as the style asks."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

# The structured answer of the fake model: a reply, no tool, no escalation.
ANSWER = {
    "action": "respond",
    "answer": "Abrimos de lunes a viernes de 8:00 a 20:00.",
    "intent": "horario",
    "sentiment": 0.2,
    "confidence": 0.9,
}
# The answers in turn of a model that answers each conversation (`answer_next`): an assistant
# that says the same thing twice is a loop (`ai_agents.rules.loops`) and its conversation goes
# to a person, whose replies the bot then does not send.
ANSWERS: tuple[str, ...] = (
    str(ANSWER["answer"]),
    "Los sábados abrimos de 9:00 a 14:00.",
    "Enviamos a toda la península en 48 horas; gratis desde 50 euros.",
)


def next_answer(said: list[str]) -> str:
    """The answer after the one in the conversation's last assistant turn (`said`: the
    assistant's turns in order; a turn may wrap the answer in other words)."""
    last = next((i for i, answer in enumerate(ANSWERS) if said and answer in said[-1]), -1)
    return ANSWERS[(last + 1) % len(ANSWERS)]


def answer_next(body: dict) -> dict:
    """`ANSWER` with the answer after the conversation's last one, from the model request's
    JSON body (Gemini's `contents`: the assistant's turns have the role "model")."""
    said = [
        part.get("text", "")
        for content in body.get("contents", [])
        if content.get("role") == "model"
        for part in content.get("parts", [])
    ]
    return {**ANSWER, "answer": next_answer(said)}


def text_webhook(
    *,
    number: str,
    wa_id: str,
    wamid: str,
    text: str,
    name: str = "José Núñez",
    entry_id: str = "102290129340398",
) -> bytes:
    """The body Meta posts for one text message from `wa_id` to the business number `number`,
    as bytes: the signature covers Meta's wire form (compact, non-ASCII and `/` escaped)."""
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550783881", "phone_number_id": number},
        "contacts": [{"profile": {"name": name}, "wa_id": wa_id}],
        "messages": [
            {
                "from": wa_id,
                "id": wamid,
                "timestamp": str(int(time.time())),
                "type": "text",
                "text": {"body": text},
            }
        ],
    }
    data = {
        "object": "whatsapp_business_account",
        "entry": [{"id": entry_id, "changes": [{"field": "messages", "value": value}]}],
    }
    return json.dumps(data, separators=(",", ":")).replace("/", "\\/").encode()


def signature(body: bytes, *, secret: str) -> str:
    """The `X-Hub-Signature-256` header Meta sends with `body` (HMAC-SHA256 of the raw bytes)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signed_headers(body: bytes, *, secret: str) -> dict[str, str]:
    """The headers of Meta's POST of `body`."""
    return {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature(body, secret=secret),
    }

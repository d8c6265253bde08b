"""Merged bursts on e-mail (ai_agents/conversations/burst.py): mails of one thread that arrive
within the agent's quiet window get ONE reply, from one model call that saw all of them,
threaded on the newest mail. A real worker answers (the quiet window is a Celery countdown),
its mail caught by a loopback SMTP server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from ai_agents.models import ChannelBinding, Message
from ai_agents.tests.channels.email.smtp_sink import smtp_sink
from ai_agents.tests.channels.email.support import model_saw, post
from erp.tenancy.scoping import tenant_scope
from erp.testing.celery_worker import worker_running
from erp.testing.deadlines import wait_until
from erp.testing.fake_google import FakeGoogle

BURST = ["Hola, buenos días.", "Una pregunta:", "¿tienen envío a Saltillo?"]


def _mail(n: int, text: str) -> bytes:
    """The customer's n-th mail of the thread, each replying to the one before."""
    ids = [f"<burst-{i}@cliente.es>" for i in range(n)]
    threading = f"In-Reply-To: {ids[-1]}\nReferences: {' '.join(ids)}\n" if ids else ""
    return (
        "From: Ana Pérez <ana@cliente.es>\nTo: ayuda@tienda.es\n"
        f"Subject: {'Re: ' if n else ''}Envíos\nMessage-ID: <burst-{n}@cliente.es>\n{threading}"
        'MIME-Version: 1.0\nContent-Type: text/plain; charset="utf-8"\n'
        f"Content-Transfer-Encoding: 8bit\n\n{text}\n"
    ).encode()


@pytest.mark.slow
def test_mails_of_one_thread_within_the_quiet_window_get_one_reply_on_the_newest(
    transactional_db: Any,
    tmp_path: Path,
    binding: ChannelBinding,
    fake_google: FakeGoogle,
    client: Any,
) -> None:
    # given: a quiet window of 2 s (posts 0.3 s apart stay one burst on a busy machine)
    agent = binding.agent
    agent.processing_config = {**agent.processing_config, "burst_quiet_ms": 2000}
    agent.save(update_fields=["processing_config"])
    fake_google.default = fake_google.reply_json({"action": "respond", "answer": "Sí, enviamos."})
    env: dict[str, Any] = {
        "GOOGLE_AI_BASE_URL": fake_google.url,
        "GOOGLE_AI_API_KEY": settings.GOOGLE_AI_API_KEY,
        "LLM_DEFAULT_MODEL": settings.LLM_DEFAULT_MODEL,
    }
    with (
        smtp_sink() as sink,
        worker_running(tmp_path, prefix="mailburst", EMAIL_URL=sink.url, **env),
    ):
        # when: Ana sends three mails of one thread 0.3 s apart
        for n, text in enumerate(BURST):
            assert post(client, binding, _mail(n, text)).json()["status"] == "accepted"
            last = time.monotonic()
            time.sleep(0.3 if n < len(BURST) - 1 else 0)
        wait_until(lambda: sink.messages, what="the reply", timeout=30)
        waited = time.monotonic() - last
        time.sleep(2.0)  # a second reply would be here by now

    # then: one reply, after the quiet window, from one model call that saw all three mails
    (reply,) = sink.messages
    assert waited >= 1.9
    assert len(fake_google.generate_requests) == 1
    assert all(text in model_saw(fake_google) for text in BURST)
    assert reply["To"] == "ana@cliente.es" and reply.get_content().strip() == "Sí, enviamos."
    # threaded on the newest mail
    assert reply["In-Reply-To"] == "<burst-2@cliente.es>"
    assert reply["References"].split() == [f"<burst-{n}@cliente.es>" for n in range(3)]
    with tenant_scope(binding.tenant):
        answered = Message.objects.get(role="assistant")
        newest = Message.objects.get(channel_message_id="<burst-2@cliente.es>")
        results = [m.metadata["result"] for m in Message.objects.filter(role="user")]
    assert answered.reply_to_id == newest.pk
    assert all(r["reply"]["text"] == "Sí, enviamos." for r in results) and len(results) == 3

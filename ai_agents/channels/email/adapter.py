"""The e-mail channel: inbound raw messages (POST /webhooks/email/<token>) and replies through
Django's e-mail backend.

Threading. A conversation remembers every Message-ID of its thread in `channel_data` (the
customer's and the ones we generated for our replies). An inbound message whose In-Reply-To or
References names one of them, from the same sender, joins that conversation. Otherwise it starts
a new thread keyed by the sender and its root id (the first References entry, else its own
Message-ID). We
deliberately do not group by sender + subject: generic subjects ("Consulta", no subject) would
merge unrelated questions, and anyone forging a From header with the same subject would join a
customer's conversation, whereas our Message-IDs cannot be guessed. A customer who writes a fresh
mail instead of replying gets a new conversation, which is what they asked for.

Loops. Bounces, delivery reports and mail from the binding's own address are dropped (200
"ignored", nothing stored: they are not a customer's words). Auto-replies from a person's mailbox
(Auto-Submitted, Precedence, X-Autoreply...) are stored in their thread, never answered, so staff
see "out of office" in the history. Our bot replies carry `Auto-Submitted: auto-replied`, so a
well-behaved bot on the other side does not answer them either.
"""

from __future__ import annotations

import hashlib
import logging
import smtplib
from email.headerregistry import Address
from email.utils import make_msgid
from typing import Any

from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.channels.email.options import email_bodies
from ai_agents.channels.email.parse import ParsedEmail, references_bound, reply_subject
from ai_agents.conversations.inbound import Inbound, inbound_accept
from ai_agents.conversations.option_reply import typed_option_pick
from ai_agents.models import Agent, ChannelBinding, Contact, Conversation, Delivery, Message
from erp.db import connection_release, save_retried
from erp.retry import Backoff, call_with_retries

logger = logging.getLogger(__name__)

CHANNEL = "email"
MAX_THREAD_IDS = 200
# 3 attempts in all, waiting 1 s and 4 s before the 2nd and 3rd (tests wait 0).
SEND_BACKOFF = Backoff(attempts=3, base_delay_s=1.0, factor=4.0)


# --- Inbound -------------------------------------------------------------------------------
def email_receive(*, binding: ChannelBinding, parsed: ParsedEmail) -> dict[str, Any]:
    """Stores one parsed inbound e-mail and queues its answer. Returns the webhook's body:
    {"status": "accepted"|"duplicate"|"ignored", "message_id": id|None[, "reason"]}."""
    own = binding.address.lower()
    if own and own in {parsed.from_address.lower(), parsed.sender.lower()}:
        return _ignored("own_address")
    if parsed.machine == "bounce":
        ignored = _ignored("bounce")
        ignored["deliveries_failed"] = bounce_record(binding=binding, parsed=parsed)
        return ignored
    contact = {
        "external_id": contact_key(parsed.sender),
        "email": parsed.sender if len(parsed.sender) <= 254 else "",
        "name": parsed.sender_name,
    }
    with transaction.atomic():  # the answer is queued on commit, after the thread is recorded
        thread_id = email_thread_find(binding=binding, parsed=parsed)
        text = parsed.text
        chosen: dict[str, Any] = {}  # a reply naming an option of our last answer
        if thread_id is not None:
            text, chosen = typed_option_pick(
                binding=binding, channel=CHANNEL, thread_id=thread_id, text=text
            )
        else:
            root = parsed.references[0] if parsed.references else parsed.message_id
            thread_id = thread_key(parsed.sender, root)
            if parsed.subject:
                text = f"{_('Asunto')}: {parsed.subject}\n\n{text}".strip()
        inbound = Inbound(
            text=text or _("(mensaje sin texto)"),
            contact=contact,
            channel=CHANNEL,
            thread_id=thread_id,
            channel_message_id=parsed.message_id,
            metadata={
                "subject": parsed.subject,
                "from": parsed.from_address,
                "message_id": parsed.message_id,
                "in_reply_to": parsed.in_reply_to[0] if parsed.in_reply_to else "",
                "reply_references": parsed.reply_references,
                "attachments": [a.__dict__ for a in parsed.attachments],
                **({"auto_reply": parsed.machine} if parsed.machine else {}),
                **chosen,
            },
        )
        answer = not parsed.machine
        message, created = inbound_accept(binding=binding, inbound=inbound, answer=answer)
        if created:
            email_thread_record(conversation_id=message.conversation_id, parsed=parsed)
    status = ("accepted" if answer else "ignored") if created else "duplicate"
    body: dict[str, Any] = {"status": status, "message_id": str(message.pk)}
    if created and not answer:
        body["reason"] = parsed.machine
    logger.info(
        "email.inbound",
        extra={"binding_id": str(binding.pk), "status": status, "message_id": str(message.pk)},
    )
    return body


def _ignored(reason: str) -> dict[str, Any]:
    logger.info("email.inbound_ignored", extra={"reason": reason})
    return {"status": "ignored", "message_id": None, "reason": reason}


def bounce_record(*, binding: ChannelBinding, parsed: ParsedEmail) -> int:
    """Marks our sent replies named in a delivery report as failed ("bounced"), so staff see
    the customer never got them. Returns how many."""
    ours = [
        i for i in parsed.bounced_ids if i.endswith("@" + binding.address.rpartition("@")[2] + ">")
    ]
    if not ours:
        return 0
    deliveries = Delivery.objects.for_tenant(binding.tenant_id).filter(
        channel=CHANNEL, external_id__in=ours
    )
    message_ids = list(deliveries.values_list("message_id", flat=True))
    count = deliveries.update(
        status=Delivery.Status.FAILED,
        error_code="bounced",
        error_message=(parsed.text or parsed.subject)[:500],
        status_at=timezone.now(),
    )
    Message.objects.for_tenant(binding.tenant_id).filter(pk__in=message_ids).update(
        delivery_status=Delivery.Status.FAILED
    )
    return count


def contact_key(address: str) -> str:
    """The contact's external id: the address itself (hashed when over the column's 100)."""
    address = address.lower()
    if len(address) <= 100:
        return address
    return "email:" + hashlib.sha256(address.encode()).hexdigest()[:64]


def thread_key(sender: str, root_id: str) -> str:
    """A new thread's id: the sender and the root message id (two people answering the same
    outside thread get a conversation each)."""
    key = f"{sender.lower()} {root_id}"
    return key if len(key) <= 255 else hashlib.sha256(key.encode()).hexdigest()


def email_thread_find(*, binding: ChannelBinding, parsed: ParsedEmail) -> str | None:
    """The thread id of the sender's conversation that knows a message this one follows."""
    ids = parsed.known_ids[:MAX_THREAD_IDS]
    if not ids:
        return None
    known = Q()
    for message_id in ids:
        known |= Q(channel_data__message_ids__contains=[message_id])
    found = (
        Conversation.objects.for_tenant(binding.tenant_id)
        .filter(agent_id=binding.agent_id, channel=CHANNEL)
        .filter(contact_identifier=contact_key(parsed.sender))
        .filter(known)
        .order_by("-started_at")
        .values_list("channel_conversation_id", flat=True)
        .first()
    )
    return found


def email_thread_record(*, conversation_id: Any, parsed: ParsedEmail) -> None:
    """Remembers the message in its conversation: its id (so replies to it thread here), the
    subject, and — for a person's message — what the next reply answers and references."""
    conversation = Conversation.objects.unscoped().select_for_update().get(pk=conversation_id)
    data = dict(conversation.channel_data or {})
    thread_ids_extend(data, [parsed.message_id])
    data.setdefault("subject", parsed.subject)
    if not parsed.machine:
        data["customer"] = parsed.sender
        data["last_message_id"] = parsed.message_id
        data["references"] = parsed.reply_references
    conversation.channel_data = data
    conversation.save(update_fields=["channel_data"])


def thread_ids_extend(data: dict[str, Any], ids: list[str]) -> None:
    known = [i for i in data.get("message_ids", []) if i not in ids]
    data["message_ids"] = (known + ids)[-MAX_THREAD_IDS:]


# --- Outbound ------------------------------------------------------------------------------
class EmailAdapter:
    """Replies from the binding's address to the customer, threaded (In-Reply-To, References,
    "Re:" subject). The reply's own Message-ID is recorded before it is sent, so the customer's
    answer to it finds the conversation."""

    def send(self, *, binding: Any, conversation: Any, message: Any) -> str:
        tenant_id = conversation.tenant_id
        headers, subject, recipient = _reply_envelope(conversation, message)
        # One delivery per message: a send a worker left half done (the sweep sends it again)
        # reuses its Message-ID, so a mailbox that got the first copy can tell it is the same.
        delivery, _created = Delivery.objects.for_tenant(tenant_id).get_or_create(
            tenant_id=tenant_id,
            message=message,
            part=0,
            defaults={
                "channel": CHANNEL,
                "external_id": make_msgid(domain=binding.address.rpartition("@")[2] or None),
            },
        )
        if delivery.status != Delivery.Status.PENDING:
            return delivery.status  # handed over already
        message_id = headers["Message-ID"] = str(delivery.external_id)
        if message.author_id is None:
            headers["Auto-Submitted"] = "auto-replied"  # RFC 3834: no bot answers a bot
        if not recipient:
            return _delivery_finish(delivery, "failed", "no_recipient", _("Sin destinatario."))
        with transaction.atomic():
            row = Conversation.objects.unscoped().select_for_update().get(pk=conversation.pk)
            data = dict(row.channel_data or {})
            thread_ids_extend(data, [message_id])
            row.channel_data = data
            row.save(update_fields=["channel_data"])
        text, html = email_bodies(message)  # the answer's options numbered (options.py)
        email = EmailMultiAlternatives(
            subject=subject,
            body=text,
            from_email=str(Address(display_name=_sender_name(binding), addr_spec=binding.address)),
            to=[recipient],
            headers=headers,
        )
        if html is not None:
            email.attach_alternative(html, "text/html")
        return _send_with_retries(email, delivery)

    def typing(self, *, binding: Any, conversation: Any, inbound: Any) -> None:
        return None  # e-mail has no typing indicator


def _reply_envelope(conversation: Any, message: Any) -> tuple[dict[str, str], str, str]:
    """Headers, subject and recipient of a reply: to the message it answers (bot replies) or
    to the customer's latest message (a person's reply)."""
    data = conversation.channel_data or {}
    parent = None
    if message.reply_to_id:
        parent = (
            Message.objects.for_tenant(conversation.tenant_id)
            .filter(pk=message.reply_to_id)
            .first()
        )
    facts = ((parent.metadata or {}).get("channel_metadata") or {}) if parent else {}
    in_reply_to = (parent.channel_message_id if parent else "") or data.get("last_message_id", "")
    references = facts.get("reply_references") or data.get("references") or []
    if in_reply_to and in_reply_to not in references:
        references = [*references, in_reply_to]
    headers: dict[str, str] = {}
    if in_reply_to:
        headers["In-Reply-To"] = in_reply_to
    if references:
        headers["References"] = " ".join(references_bound(references))
    subject = reply_subject(facts.get("subject") or data.get("subject") or "")
    recipient = data.get("customer") or ""
    if not recipient and conversation.contact_id:
        contact = Contact.objects.for_tenant(conversation.tenant_id).filter(
            pk=conversation.contact_id
        )
        recipient = contact.values_list("email", flat=True).first() or ""
    return headers, subject, recipient


def _sender_name(binding: Any) -> str:
    if binding.name:
        return str(binding.name)
    name = (
        Agent.objects.for_tenant(binding.tenant_id)
        .filter(pk=binding.agent_id)
        .values_list("name", flat=True)
        .first()
    )
    return str(name or "")


def _send_with_retries(email: EmailMessage, delivery: Delivery) -> str:
    """Sends, retrying transient failures (4xx replies, dropped connections); any backend error
    is recorded on the delivery, never raised."""

    def send() -> None:
        delivery.attempts += 1
        email.send(fail_silently=False)

    def log_retry(attempt: int, exc: Exception, wait_s: float) -> None:
        code = smtp_error_kind(exc)[0]
        extra = {"delivery_id": delivery.pk, "attempt": attempt, "code": code}
        logger.warning("email.send_retry", extra=extra)

    delivery.attempts = 0
    connection_release()  # no connection held while the mail server answers (and retries)
    try:
        call_with_retries(
            send,
            backoff=SEND_BACKOFF,
            retryable=lambda exc: smtp_error_kind(exc)[1],
            on_retry=log_retry,
        )
    except Exception as exc:  # any backend error is recorded, never raised
        code, _transient = smtp_error_kind(exc)
        logger.warning("email.send_failed", extra={"delivery_id": delivery.pk, "code": code})
        return _delivery_finish(delivery, "failed", code, str(exc))
    return _delivery_finish(delivery, "sent", "", "")


def smtp_error_kind(exc: Exception) -> tuple[str, bool]:
    """A short error code and whether trying again may help (4xx replies, dropped connections)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _msg in exc.recipients.values()]
        transient = bool(codes) and all(400 <= c < 500 for c in codes)
        return f"smtp_{codes[0] if codes else 'refused'}", transient
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"smtp_{exc.smtp_code}", 400 <= exc.smtp_code < 500
    if isinstance(exc, smtplib.SMTPServerDisconnected | smtplib.SMTPConnectError):
        return "smtp_disconnected", True
    if isinstance(exc, smtplib.SMTPException):
        return "smtp_error", False
    if isinstance(exc, OSError):  # refused, reset, timed out
        return "smtp_unreachable", True
    return type(exc).__name__[:40], False


def _delivery_finish(delivery: Delivery, status: str, code: str, error: str) -> str:
    delivery.status = status
    delivery.error_code = code[:40]
    delivery.error_message = error[:500]
    delivery.status_at = timezone.now()
    # Retried: a "sent" not stored would make the sweep send the mail again (delivery_sweep.py).
    save_retried(delivery, ["status", "error_code", "error_message", "attempts", "status_at"])
    return status

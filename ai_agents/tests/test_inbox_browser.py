"""The staff inbox in Debian's Chromium (Playwright): a staff member logs in, sees the
escalated conversation, claims it, replies; the reply is stored as theirs; a new customer
message appears without a reload (by polling: the WSGI live server has no event stream); a
conversation someone else holds cannot be claimed (its controls are disabled)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from ai_agents.models import Conversation, Message
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.scoping import tenant_scope
from erp.testing.browser import BROWSER_TEST, admin_login
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST


def _login(page: Any, persona: Persona) -> None:
    page.goto("/inbox/")
    assert "/admin/login/" in page.url  # login required
    admin_login(page, persona, "/inbox/")


def _claim_and_reply(page: Any, text: str) -> None:
    """Claim the open conversation (the reply box opens, the claim button closes), reply."""
    from playwright.sync_api import expect

    page.locator("#inbox-claim").click()
    expect(page.locator("#inbox-holder")).to_have_attribute("data-claimed", "true")
    expect(page.locator("#inbox-holder")).to_contain_text("La atiende usted")
    expect(page.locator("#inbox-reply-text")).to_be_enabled()
    expect(page.locator("#inbox-claim")).to_be_disabled()

    page.get_by_label("Su respuesta").fill(text)
    page.locator("#inbox-send").click()
    expect(page.locator('#inbox-messages li[data-kind="person"]')).to_contain_text(text)
    expect(page.locator("#inbox-reply-text")).to_have_value("")


def test_staff_claims_and_replies_from_the_inbox(
    live_page: Any, owner: Persona, outsider: Persona
) -> None:
    from playwright.sync_api import expect

    page = live_page

    conversation = conversation_make(
        agent_for(owner.tenant), thread="maria", customer_text="Mi pedido no ha llegado"
    )
    other = conversation_make(agent_for(outsider.tenant), thread="ajeno")

    _login(page, owner)
    row = page.locator(f'.inbox-card[data-conversation-id="{conversation.pk}"]')
    expect(row).to_contain_text("Cliente maria")
    expect(row).to_contain_text("El cliente pidió una persona")
    expect(page.locator(f'.inbox-card[data-conversation-id="{other.pk}"]')).to_have_count(0)

    row.locator(".card-open").click()
    page.wait_for_url(f"**/inbox/{conversation.pk}")
    messages = page.locator("#inbox-messages li")
    expect(messages.first).to_contain_text("Mi pedido no ha llegado")
    expect(page.locator("#inbox-reply-text")).to_be_disabled()

    _claim_and_reply(page, "Hola María, lo reviso ahora mismo.")

    with tenant_scope(owner.tenant):
        reply = Message.objects.get(author__isnull=False)
        assert reply.content == "Hola María, lo reviso ahora mismo."
        assert reply.author_id == owner.user.pk
        assert reply.conversation_id == conversation.pk
        stored = Conversation.objects.get(pk=conversation.pk)
        assert stored.assigned_to_id == owner.user.pk and stored.status == "escalated"

        # The customer writes again: it shows up without a reload (polling).
        Message.objects.create(
            tenant=owner.tenant,
            conversation=conversation,
            agent=conversation.agent,
            role="user",
            content="¡Gracias! Es el pedido 1234.",
            created_at=timezone.now(),
        )
    expect(page.locator('#inbox-messages li[data-kind="customer"]').last).to_contain_text(
        "pedido 1234"
    )

    page.locator("#inbox-release").click()
    expect(page.locator("#inbox-status")).to_have_text("Activa")
    expect(page.locator("#inbox-reply-text")).to_be_disabled()


def test_a_conversation_held_by_someone_else_shows_the_conflict(
    live_page: Any, owner: Persona, member: Persona
) -> None:
    from playwright.sync_api import expect

    from ai_agents.services import handoff

    page = live_page

    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, member.user)

    _login(page, owner)
    page.goto(f"/inbox/{conversation.pk}")
    expect(page.locator("#inbox-holder")).to_contain_text(member.user.email)
    # Nobody can take it from a colleague: the controls stay disabled while the lease runs.
    expect(page.locator("#inbox-claim")).to_be_disabled()
    expect(page.locator("#inbox-close")).to_be_disabled()
    expect(page.locator("#inbox-send")).to_be_disabled()

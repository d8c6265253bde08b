"""The visitor's side of a handoff on the web chat: notices (once per event), the rating at
close (once, bad values in words), typing both ways and delivered/read, with two tenants and a
person who belongs to both."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from ai_agents.models import ChannelBinding, Conversation, HandoffSettings, Message
from ai_agents.services.handoff import (
    conversation_claim,
    conversation_close,
    conversation_release,
    conversation_reply,
)
from ai_agents.tests.channels.webchat.support import Visitor, respond
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona


def _started(binding: ChannelBinding, fake_google: FakeGoogle, text: str) -> tuple[Visitor, Any]:
    visitor = Visitor(binding)
    visitor.start()
    respond(fake_google, "Claro, dígame.")
    assert visitor.say(text).status_code == 200
    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    return visitor, conversation


def _post(visitor: Visitor, path: str, body: Any) -> Any:
    return visitor.client.post(
        f"/api/webchat/{visitor.key}/{path}",
        json.dumps(body) if not isinstance(body, str) else body,
        content_type="application/json",
        HTTP_X_WEBCHAT_TOKEN=visitor.token,
    )


def _notices(visitor: Visitor) -> list[tuple[str, str]]:
    return [(m["notice"], m["text"]) for m in visitor.history().json()["messages"] if m["notice"]]


@pytest.mark.django_db
def test_one_notice_per_event_even_on_double_clicks_and_in_the_customers_language(
    binding: ChannelBinding, fake_google: FakeGoogle, owner: Persona
) -> None:
    visitor, conversation = _started(binding, fake_google, "Hello, I need help with my order")
    conversation_claim(conversation, owner.user)
    conversation_claim(conversation, owner.user)  # a double click
    conversation_release(conversation, owner.user)
    conversation_claim(conversation, owner.user)
    HandoffSettings.objects.for_tenant(binding.tenant).create(
        tenant=binding.tenant, notice_close_en="Thanks from Acme, bye!"
    )
    conversation_close(conversation, owner.user)

    assert _notices(visitor) == [
        ("claim", "A person from our team is taking care of you now."),
        (
            "release",
            "The person from our team hands you back to the assistant, still at your service.",
        ),
        ("claim", "A person from our team is taking care of you now."),
        ("close", "Thanks from Acme, bye!"),
    ]
    # never in the model's history, never counted as a bot answer
    rows = Message.objects.for_tenant(binding.tenant).filter(metadata__has_key="customer_notice")
    assert {m.role for m in rows} == {"system"}
    state = visitor.history().json()
    assert state["rating_pending"] is True and state["rated"] is False


@pytest.mark.django_db
def test_the_visitor_rates_once_with_a_comment_and_bad_values_are_400_in_words(
    binding: ChannelBinding,
    binding_b: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    api_a: APIClient,
    api_b: APIClient,
) -> None:
    visitor, conversation = _started(binding, fake_google, "¿Tienen envío gratis?")
    assert _post(visitor, "rating", {"rating": 4}).json()["error"]["code"] == "rating_unavailable"
    conversation_close(conversation, owner.user)

    for body, field in (
        ({"rating": "cuatro"}, "rating"),
        ({"rating": 0}, "rating"),
        ({"rating": 6}, "rating"),
        ({"rating": True}, "rating"),
        ({"rating": 4, "text": "x" * 2001}, "text"),
        ({"rating": 4, "text": 5}, "text"),
    ):
        response = _post(visitor, "rating", body)
        assert response.status_code == 400, body
        error = response.json()["error"]
        assert error["field"] == field and " " in error["message"]
    assert _post(visitor, "rating", "[1,2]").status_code == 400

    # A visitor of tenant B's chat cannot rate (their token names another binding).
    other = Visitor(binding_b, origin="https://globex.example")
    other.start()
    stolen = other.client.post(
        f"/api/webchat/{binding.token}/rating",
        json.dumps({"rating": 1}),
        content_type="application/json",
        HTTP_X_WEBCHAT_TOKEN=other.token,
        HTTP_ORIGIN="https://shop.example",
    )
    assert stolen.status_code == 401

    done = _post(visitor, "rating", {"rating": 4, "text": "  Muy amable, gracias.  "})
    assert done.status_code == 200, done.content
    assert done.json()["rated"] is True and done.json()["rating_pending"] is False
    again = _post(visitor, "rating", {"rating": 1})
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_rated"

    detail = api_a.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert (detail["satisfaction_rating"], detail["feedback_text"]) == (4, "Muy amable, gracias.")
    assert api_b.get(f"/api/v1/conversations/{conversation.pk}").status_code == 404


@pytest.mark.django_db
def test_typing_both_ways_with_two_tenants_and_a_person_in_both(
    binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    outsider: Persona,
    api_a: APIClient,
) -> None:
    visitor, conversation = _started(binding, fake_google, "Hola, quiero cambiar mi pedido")
    url = f"/api/v1/conversations/{conversation.pk}"
    assert api_a.get(url).json()["customer_typing"] is False
    assert _post(visitor, "typing", {}).json() == {"typing": True}
    assert api_a.get(url).json()["customer_typing"] is True

    # Staff typing: tenant B's person gets 404 until they act in tenant A.
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.AGENT)
    both = APIClient()
    both.force_login(outsider.user)
    both.defaults["HTTP_X_TENANT"] = outsider.tenant.slug
    assert both.post(f"{url}/typing").status_code == 404
    assert visitor.history().json()["staff_typing"] is False
    both.defaults["HTTP_X_TENANT"] = owner.tenant.slug
    answer = both.post(f"{url}/typing")
    assert answer.status_code == 200 and answer.json() == {"typing": True, "expires_in_s": 6}
    assert visitor.history().json()["staff_typing"] is True
    assert api_a.post(f"{url}/typing").status_code == 200  # an integration, no person

    conversation_close(conversation, owner.user)
    closed = both.post(f"{url}/typing")
    assert closed.status_code == 409 and closed.json()["error"]["code"] == "conversation_closed"


@pytest.mark.django_db
def test_a_persons_reply_is_delivered_when_fetched_and_read_when_shown_never_back(
    binding: ChannelBinding,
    binding_b: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    api_a: APIClient,
) -> None:
    visitor, conversation = _started(binding, fake_google, "¿Me ayuda alguien?")
    conversation = conversation_claim(conversation, owner.user)
    reply = conversation_reply(conversation, owner.user, "Sí, le atiendo yo.")
    url = f"/api/v1/conversations/{conversation.pk}"

    def shown() -> tuple[str, str]:
        [row] = [m for m in api_a.get(url).json()["messages"] if m["id"] == str(reply.pk)]
        return row["delivery_status"], row["delivery_status_label"]

    assert shown() == ("", "")
    other = Visitor(binding_b, origin="https://globex.example")  # tenant B's visitor
    other.start()
    assert _post(other, "read", {"ids": [str(reply.pk)]}).json() == {"read": 0}
    assert shown() == ("", "")
    visitor.history()
    assert shown() == ("delivered", "Entregado")
    assert _post(visitor, "read", {"ids": [str(reply.pk), "not-an-id"]}).json() == {"read": 1}
    assert shown() == ("read", "Leído")
    visitor.history()  # fetched again: stays read
    assert shown() == ("read", "Leído")
    assert _post(visitor, "read", {"ids": "all"}).status_code == 400
    assert _post(visitor, "read", {"ids": [str(i) for i in range(201)]}).status_code == 400


@pytest.mark.django_db
def test_with_rating_off_the_close_asks_nothing(
    binding: ChannelBinding, fake_google: FakeGoogle, owner: Persona
) -> None:
    HandoffSettings.objects.for_tenant(binding.tenant).create(
        tenant=binding.tenant, rating_request=False
    )
    visitor, conversation = _started(binding, fake_google, "¿Abren mañana?")
    conversation_close(conversation, owner.user)
    assert _notices(visitor) == [
        ("close", "Hemos cerrado esta conversación. ¡Gracias por escribirnos!")
    ]
    assert visitor.history().json()["rating_pending"] is False
    refused = _post(visitor, "rating", {"rating": 5})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "rating_unavailable"

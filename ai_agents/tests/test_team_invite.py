"""An owner invites an agent from the team page; the agent chooses a password through the
e-mailed link (signed in, on the start page), the link then no longer works, and the agent
signs in again to the inbox of that tenant only."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.fixtures import Persona, session_client_for
from erp.testing.team import INVITE_LINK, team_invite, team_roles

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_invite_allowance")]


def test_an_invited_agent_sets_a_password_and_sees_only_that_tenants_inbox(
    owner: Persona, outsider: Persona, mailoutbox: list[Any]
) -> None:
    ours = conversation_make(agent_for(owner.tenant), thread="ours")
    theirs = conversation_make(agent_for(outsider.tenant), thread="theirs")

    response = team_invite(session_client_for(owner), " Ana@Acme.test ")

    assert response.status_code == 200
    page = response.content.decode()
    assert INVITE_LINK.findall(page) == []  # the link goes to the person's address only
    user = get_user_model().objects.get(username="ana@acme.test")
    assert (user.is_staff, user.has_usable_password()) == (True, False)
    assert team_roles(owner.tenant)["ana@acme.test"] == "agent"
    [mail] = mailoutbox
    [link] = set(INVITE_LINK.findall(mail.body))
    assert mail.to == ["ana@acme.test"]
    assert mail.subject == "Le han invitado al equipo de Acme"
    assert link in mail.body and "«agente»" in mail.body and "caduca en 3 días" in mail.body

    # The link asks for a password once, signs the person in and lands on the start page.
    person = Client()
    form = person.get(urlsplit(link).path, follow=True)
    assert "Elija su contraseña" in form.content.decode()
    done = person.post(
        form.redirect_chain[-1][0],
        {"new_password1": "pan-con-tomate-7", "new_password2": "pan-con-tomate-7"},
    )
    assert done.status_code == 302 and done["Location"] == "/"
    assert 'data-tenant="acme"' in person.get("/").content.decode()
    again = Client().get(urlsplit(link).path, follow=True).content.decode()
    assert "Este enlace ya no sirve" in again

    later = Client()
    assert later.login(username="ana@acme.test", password="pan-con-tomate-7")
    inbox = later.get("/inbox/").content.decode()
    assert str(ours.pk) in inbox and str(theirs.pk) not in inbox
    assert later.get("/team/globex/").status_code == 404

"""The team page (`/team/<slug>/`): an owner invites a teammate by e-mail, who chooses a password
through the one-time link and works with that role in that tenant only; agents cannot change
the team; outsiders get 404 and change nothing; a tenant always keeps an owner; bad input is
answered in words."""

from __future__ import annotations

import re
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db

LINK = re.compile(r"https?://[^\s\"<]+/password/set/[^\s\"<]+/")


def _client(persona: Persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def _roles(tenant: Any) -> dict[str, str]:
    rows = Membership.objects.for_tenant(tenant).values_list("user__email", "role")
    return dict(rows)


def _invite(client: Client, email: str, role: str = "agent", slug: str = "acme") -> Any:
    return client.post(f"/team/{slug}/invite", {"email": email, "role": role})


def test_an_invited_agent_sets_a_password_and_sees_only_that_tenants_inbox(
    owner: Persona, outsider: Persona, mailoutbox: list[Any]
) -> None:
    ours = conversation_make(agent_for(owner.tenant), thread="ours")
    theirs = conversation_make(agent_for(outsider.tenant), thread="theirs")

    response = _invite(_client(owner), " Ana@Acme.test ")

    assert response.status_code == 200
    page = response.content.decode()
    [link] = set(LINK.findall(page))
    user = get_user_model().objects.get(username="ana@acme.test")
    assert (user.is_staff, user.has_usable_password()) == (True, False)
    assert _roles(owner.tenant)["ana@acme.test"] == "agent"
    [mail] = mailoutbox
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


def test_an_expired_link_says_so_in_words(
    owner: Persona, mailoutbox: list[Any], settings: Any
) -> None:
    _invite(_client(owner), "tarde@acme.test")
    [link] = LINK.findall(mailoutbox[0].body)
    settings.PASSWORD_RESET_TIMEOUT = -1
    page = Client().get(urlsplit(link).path, follow=True).content.decode()
    assert "Este enlace ya no sirve" in page and "new_password1" not in page


def test_an_agent_sees_the_team_but_cannot_change_it(
    owner: Persona, member: Persona, mailoutbox: list[Any]
) -> None:
    client = _client(member)
    page = client.get("/team/acme/").content.decode()
    assert "owner@acme.test" in page and "Propietario" in page
    assert "/team/acme/invite" not in page and "Cambiar rol" not in page
    before = _roles(owner.tenant)

    assert _invite(client, "otro@acme.test").status_code == 403
    role_url = f"/team/acme/members/{owner.membership.pk}/role"
    refused = client.post(role_url, {"role": "agent"})
    assert refused.status_code == 403
    assert "Solo el propietario o un administrador" in refused.content.decode()
    remove_url = f"/team/acme/members/{owner.membership.pk}/remove"
    assert client.post(remove_url).status_code == 403

    assert _roles(owner.tenant) == before
    assert not get_user_model().objects.filter(username="otro@acme.test").exists()
    assert mailoutbox == []


def test_outsiders_get_404_and_a_member_of_both_sees_each_team_under_its_tenant(
    owner: Persona, member: Persona, outsider: Persona, mailoutbox: list[Any]
) -> None:
    intruder = _client(outsider)
    before = (_roles(owner.tenant), _roles(outsider.tenant))
    assert intruder.get("/team/acme/").status_code == 404
    assert _invite(intruder, "x@globex.test").status_code == 404
    for slug in ("acme", "globex"):
        url = f"/team/{slug}/members/{member.membership.pk}/"
        assert intruder.post(url + "role", {"role": "admin"}).status_code == 404
        assert intruder.post(url + "remove").status_code == 404
    assert (_roles(owner.tenant), _roles(outsider.tenant)) == before
    assert mailoutbox == []

    MembershipFactory.create(tenant=outsider.tenant, user=owner.user, role="agent")
    both = _client(owner)
    acme = both.get("/team/acme/").content.decode()
    globex = both.get("/team/globex/").content.decode()
    assert "agent@acme.test" in acme and "owner@globex.test" not in acme
    assert "owner@globex.test" in globex and "agent@acme.test" not in globex
    assert "/team/acme/invite" in acme and "/team/globex/invite" not in globex  # agent there
    assert _invite(both, "y@globex.test", slug="globex").status_code == 403
    assert both.get("/team/").headers["Location"] == "/team/acme/"


def test_a_tenant_always_keeps_an_owner_and_only_owners_make_owners(
    owner: Persona, member: Persona
) -> None:
    client = _client(owner)
    own = f"/team/acme/members/{owner.membership.pk}/"
    for response in (client.post(own + "role", {"role": "admin"}), client.post(own + "remove")):
        assert response.status_code == 400
        assert "Es el único propietario de la empresa" in response.content.decode()
    assert _roles(owner.tenant)["owner@acme.test"] == "owner"

    # An owner makes an admin; an admin invites and re-roles agents and admins, not owners.
    client.post(f"/team/acme/members/{member.membership.pk}/role", {"role": "admin"})
    admin = _client(member)
    assert _invite(admin, "jefa@acme.test", "owner").status_code == 403
    assert admin.post(own + "role", {"role": "agent"}).status_code == 403
    assert admin.post(own + "remove").status_code == 403
    assert _invite(admin, "ayuda@acme.test", "admin").status_code == 200
    assert "jefa@acme.test" not in _roles(owner.tenant)
    assert _roles(owner.tenant)["owner@acme.test"] == "owner"

    # With a second owner, the first may step down.
    second = f"/team/acme/members/{member.membership.pk}/role"
    assert client.post(second, {"role": "owner"}).status_code == 302
    assert client.post(own + "role", {"role": "agent"}).status_code == 302
    assert _roles(owner.tenant)["owner@acme.test"] == "agent"
    assert _client(member).post(f"{second}", {"role": "admin"}).status_code == 400


@pytest.mark.parametrize(
    ("email", "role", "words"),
    [
        ("no-es-un-correo", "agent", "«no-es-un-correo» no es un correo electrónico válido."),
        ("", "agent", "Escriba el correo electrónico de la persona."),
        ("ok@acme.test", "jefe", "Elija un rol de la lista"),
        ("a" * 150 + "@acme.test", "agent", "El correo electrónico es demasiado largo."),
    ],
)
def test_bad_input_is_answered_in_words_and_creates_nothing(
    owner: Persona, mailoutbox: list[Any], email: str, role: str, words: str
) -> None:
    response = _invite(_client(owner), email, role)
    assert response.status_code == 400
    assert words in response.content.decode()
    assert get_user_model().objects.count() == 1 and mailoutbox == []


def test_bad_ids_and_roles_on_a_member_are_4xx(owner: Persona, member: Persona) -> None:
    client = _client(owner)
    assert client.post("/team/acme/members/abc/role", {"role": "admin"}).status_code == 404
    assert client.post("/team/acme/members/99999999999999999999/remove").status_code == 404
    url = f"/team/acme/members/{member.membership.pk}/role"
    response = client.post(url, {"role": "root"})
    assert response.status_code == 400 and "Elija un rol de la lista" in response.content.decode()
    assert client.get(url).status_code == 405
    assert _roles(owner.tenant)["agent@acme.test"] == "agent"


def test_an_existing_account_is_added_and_told_without_a_link(
    owner: Persona, outsider: Persona, mailoutbox: list[Any]
) -> None:
    password_before = get_user_model().objects.get(pk=outsider.user.pk).password
    page = _invite(_client(owner), "OWNER@globex.test", "admin").content.decode()

    assert "owner@globex.test está en el equipo y puede entrar con su cuenta." in page
    assert "/password/set/" not in page and "Globex" not in page
    [mail] = mailoutbox
    assert "/password/set/" not in mail.body and "contraseña de siempre" in mail.body
    assert get_user_model().objects.get(pk=outsider.user.pk).password == password_before
    assert _roles(owner.tenant)["owner@globex.test"] == "admin"
    assert _client(outsider).get("/team/acme/").status_code == 200

    # Invited by another tenant and not yet in: the link goes by e-mail only, never to us.
    _invite(_client(outsider), "nuevo@globex.test", slug="globex")
    page = _invite(_client(owner), "nuevo@globex.test").content.decode()
    assert "/password/set/" not in page
    assert "/password/set/" in mailoutbox[-1].body


def test_inviting_a_member_again_renews_the_link_only_while_it_is_ours(
    owner: Persona, mailoutbox: list[Any]
) -> None:
    client = _client(owner)
    _invite(client, "ana@acme.test")
    page = _invite(client, "ana@acme.test").content.decode()
    assert len(LINK.findall(page)) == 1 and len(mailoutbox) == 2
    page = _invite(client, "owner@acme.test").content.decode()
    assert "owner@acme.test ya es del equipo." in page and len(mailoutbox) == 2


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_without_mail_the_page_says_so_and_shows_the_link(owner: Persona, settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    page = _invite(_client(owner), "uno@acme.test").content.decode()
    assert "no tiene configurado el envío de correo" in page and LINK.search(page)

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = (
        "127.0.0.1",
        _closed_port(),
        2,
    )
    response = _invite(_client(owner), "dos@acme.test")
    page = response.content.decode()
    assert response.status_code == 200
    assert "No se pudo enviar el correo" in page and LINK.search(page)
    assert _roles(owner.tenant)["dos@acme.test"] == "agent"

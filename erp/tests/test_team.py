"""The team page (`/team/<slug>/`): an owner or admin invites a teammate by e-mail (the
one-time link: ai_agents/tests/test_team_invite.py follows it to the inbox); agents cannot change
the team; outsiders get 404 and change nothing; a tenant always keeps an owner; bad input is
answered in words."""

from __future__ import annotations

import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona, session_client_for
from erp.testing.team import INVITE_LINK, team_invite, team_roles

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_invite_allowance")]


def test_an_expired_link_says_so_in_words(
    owner: Persona, mailoutbox: list[Any], settings: Any
) -> None:
    team_invite(session_client_for(owner), "tarde@acme.test")
    [link] = INVITE_LINK.findall(mailoutbox[0].body)
    settings.PASSWORD_RESET_TIMEOUT = -1
    page = Client().get(urlsplit(link).path, follow=True).content.decode()
    assert "Este enlace ya no sirve" in page and "new_password1" not in page


def test_an_agent_sees_the_team_but_cannot_change_it(
    owner: Persona, member: Persona, mailoutbox: list[Any]
) -> None:
    client = session_client_for(member)
    page = client.get("/team/acme/").content.decode()
    assert "owner@acme.test" in page and "Propietario" in page
    assert "/team/acme/invite" not in page and "Cambiar rol" not in page
    before = team_roles(owner.tenant)

    assert team_invite(client, "otro@acme.test").status_code == 403
    role_url = f"/team/acme/members/{owner.membership.pk}/role"
    refused = client.post(role_url, {"role": "agent"})
    assert refused.status_code == 403
    assert "Solo el propietario o un administrador" in refused.content.decode()
    remove_url = f"/team/acme/members/{owner.membership.pk}/remove"
    assert client.post(remove_url).status_code == 403

    assert team_roles(owner.tenant) == before
    assert not get_user_model().objects.filter(username="otro@acme.test").exists()
    assert mailoutbox == []


def test_outsiders_get_404_and_a_member_of_both_sees_each_team_under_its_tenant(
    owner: Persona, member: Persona, outsider: Persona, mailoutbox: list[Any]
) -> None:
    intruder = session_client_for(outsider)
    before = (team_roles(owner.tenant), team_roles(outsider.tenant))
    assert intruder.get("/team/acme/").status_code == 404
    assert team_invite(intruder, "x@globex.test").status_code == 404
    for slug in ("acme", "globex"):
        url = f"/team/{slug}/members/{member.membership.pk}/"
        assert intruder.post(url + "role", {"role": "admin"}).status_code == 404
        assert intruder.post(url + "remove").status_code == 404
    assert (team_roles(owner.tenant), team_roles(outsider.tenant)) == before
    assert mailoutbox == []

    MembershipFactory.create(tenant=outsider.tenant, user=owner.user, role="agent")
    both = session_client_for(owner)
    acme = both.get("/team/acme/").content.decode()
    globex = both.get("/team/globex/").content.decode()
    assert "agent@acme.test" in acme and "owner@globex.test" not in acme
    assert "owner@globex.test" in globex and "agent@acme.test" not in globex
    assert "/team/acme/invite" in acme and "/team/globex/invite" not in globex  # agent there
    assert team_invite(both, "y@globex.test", slug="globex").status_code == 403
    assert both.get("/team/").headers["Location"] == "/team/acme/"


def test_a_tenant_always_keeps_an_owner_and_only_owners_make_owners(
    owner: Persona, member: Persona
) -> None:
    client = session_client_for(owner)
    own = f"/team/acme/members/{owner.membership.pk}/"
    for response in (client.post(own + "role", {"role": "admin"}), client.post(own + "remove")):
        assert response.status_code == 400
        assert "Es el único propietario de la empresa" in response.content.decode()
    assert team_roles(owner.tenant)["owner@acme.test"] == "owner"

    # An owner makes an admin; an admin invites and re-roles agents and admins, not owners.
    client.post(f"/team/acme/members/{member.membership.pk}/role", {"role": "admin"})
    admin = session_client_for(member)
    assert team_invite(admin, "jefa@acme.test", "owner").status_code == 403
    assert admin.post(own + "role", {"role": "agent"}).status_code == 403
    assert admin.post(own + "remove").status_code == 403
    assert team_invite(admin, "ayuda@acme.test", "admin").status_code == 200
    assert "jefa@acme.test" not in team_roles(owner.tenant)
    assert team_roles(owner.tenant)["owner@acme.test"] == "owner"

    # With a second owner, the first may step down.
    second = f"/team/acme/members/{member.membership.pk}/role"
    assert client.post(second, {"role": "owner"}).status_code == 302
    assert client.post(own + "role", {"role": "agent"}).status_code == 302
    assert team_roles(owner.tenant)["owner@acme.test"] == "agent"
    assert session_client_for(member).post(f"{second}", {"role": "admin"}).status_code == 400


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
    response = team_invite(session_client_for(owner), email, role)
    assert response.status_code == 400
    assert words in response.content.decode()
    assert get_user_model().objects.count() == 1 and mailoutbox == []


def test_bad_ids_and_roles_on_a_member_are_4xx(owner: Persona, member: Persona) -> None:
    client = session_client_for(owner)
    assert client.post("/team/acme/members/abc/role", {"role": "admin"}).status_code == 404
    assert client.post("/team/acme/members/99999999999999999999/remove").status_code == 404
    url = f"/team/acme/members/{member.membership.pk}/role"
    response = client.post(url, {"role": "root"})
    assert response.status_code == 400 and "Elija un rol de la lista" in response.content.decode()
    assert client.get(url).status_code == 405
    assert team_roles(owner.tenant)["agent@acme.test"] == "agent"


def test_an_existing_account_is_added_and_told_without_a_link(
    owner: Persona, outsider: Persona, mailoutbox: list[Any]
) -> None:
    password_before = get_user_model().objects.get(pk=outsider.user.pk).password
    page = team_invite(session_client_for(owner), "OWNER@globex.test", "admin").content.decode()

    assert "owner@globex.test está en el equipo y puede entrar con su cuenta." in page
    assert "/password/set/" not in page and "Globex" not in page
    [mail] = mailoutbox
    assert "/password/set/" not in mail.body and "contraseña de siempre" in mail.body
    assert get_user_model().objects.get(pk=outsider.user.pk).password == password_before
    assert team_roles(owner.tenant)["owner@globex.test"] == "admin"
    assert session_client_for(outsider).get("/team/acme/").status_code == 200

    # Invited by another tenant and not yet in: the link goes by e-mail only, never to us.
    team_invite(session_client_for(outsider), "nuevo@globex.test", slug="globex")
    page = team_invite(session_client_for(owner), "nuevo@globex.test").content.decode()
    assert "/password/set/" not in page
    assert "/password/set/" in mailoutbox[-1].body


def test_inviting_a_member_again_mails_a_new_link_and_never_shows_it(
    owner: Persona, mailoutbox: list[Any]
) -> None:
    client = session_client_for(owner)
    first = team_invite(client, "ana@acme.test").content.decode()
    page = team_invite(client, "ana@acme.test").content.decode()
    # Whoever sees the link could choose the person's password (and own the account): the
    # link goes to the person's address only, even for an inviter who created the account.
    assert INVITE_LINK.findall(first + page) == [] and len(mailoutbox) == 2
    assert "Le hemos enviado el enlace por correo" in page
    assert len(INVITE_LINK.findall(mailoutbox[-1].body)) == 1
    page = team_invite(client, "owner@acme.test").content.decode()
    assert "owner@acme.test ya es del equipo." in page and len(mailoutbox) == 2


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_without_mail_the_page_says_so_and_never_shows_the_link(
    owner: Persona, settings: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    page = team_invite(session_client_for(owner), "uno@acme.test").content.decode()
    assert "no tiene configurado el envío de correo" in page and not INVITE_LINK.search(page)

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = (
        "127.0.0.1",
        _closed_port(),
        2,
    )
    response = team_invite(session_client_for(owner), "dos@acme.test")
    page = response.content.decode()
    assert response.status_code == 200
    assert "No se pudo enviar el correo" in page and not INVITE_LINK.search(page)
    assert team_roles(owner.tenant)["dos@acme.test"] == "agent"


def test_the_e_mail_speaks_the_tenants_language(owner: Persona, mailoutbox: list[Any]) -> None:
    owner.tenant.language = "en"
    owner.tenant.save()
    page = team_invite(session_client_for(owner), "eve@acme.test", "admin").content.decode()
    assert "Invitar a un compañero" in page  # the page follows the reader (Spanish here)
    [mail] = mailoutbox
    assert mail.subject == "You have been invited to the Acme team"
    assert "with the role “administrator”" in mail.body and "expires in 3 days" in mail.body


def test_members_are_listed_with_name_e_mail_role_in_words_and_last_login(
    owner: Persona, member: Persona
) -> None:
    member.user.first_name, member.user.last_name = "Ana", "Ruiz"
    member.user.save()
    english = session_client_for(owner).get("/team/acme/", HTTP_ACCEPT_LANGUAGE="en")
    page = english.content.decode()
    assert "<strong>Ana Ruiz</strong>" in page and "<p>agent@acme.test</p>" in page
    assert '<span class="role">Agent</span>' in page and '<span class="role">Owner</span>' in page
    assert "Last sign-in: has not signed in yet" in page and "Acme team" in page


def test_a_member_who_leaves_goes_to_the_start_page(owner: Persona, member: Persona) -> None:
    client = session_client_for(member)
    response = client.post(f"/team/acme/members/{member.membership.pk}/remove")
    assert response.status_code == 403  # an agent cannot change the team, not even leave
    session_client_for(owner).post(
        f"/team/acme/members/{member.membership.pk}/role", {"role": "admin"}
    )
    response = client.post(f"/team/acme/members/{member.membership.pk}/remove")
    assert (response.status_code, response["Location"]) == (302, "/")
    assert "agent@acme.test" not in team_roles(owner.tenant)
    assert client.get("/team/acme/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_two_owners_demoting_each_other_at_once_leave_one_owner(owner: Persona) -> None:
    from django.db import connection

    from erp.tenancy.team.services import TeamError, membership_role_set

    second = MembershipFactory.create(tenant=owner.tenant, role="owner")
    barrier = threading.Barrier(2, timeout=30)
    outcomes: list[str] = []

    def demote(membership: Membership) -> None:
        barrier.wait()
        try:
            membership_role_set(membership=membership, role="admin", by_role="owner")
            outcomes.append("demoted")
        except TeamError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=demote, args=(m,)) for m in (owner.membership, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["demoted", "refused"]
    assert list(team_roles(owner.tenant).values()).count("owner") == 1


def test_invitations_are_bounded_per_tenant_and_hour(
    owner: Persona, outsider: Persona, mailoutbox: list[Any], monkeypatch: Any
) -> None:
    from erp.tenancy.team import services

    monkeypatch.setattr(services, "INVITES_PER_HOUR", 2)
    client = session_client_for(owner)
    assert team_invite(client, "a1@acme.test").status_code == 200
    assert team_invite(client, "a2@acme.test").status_code == 200
    refused = team_invite(client, "a3@acme.test")
    assert refused.status_code == 429
    assert "Podrá invitar de nuevo dentro de 60 minutos." in refused.content.decode()
    assert "a3@acme.test" not in team_roles(owner.tenant) and len(mailoutbox) == 2
    other = team_invite(session_client_for(outsider), "b1@globex.test", slug="globex")
    assert other.status_code == 200  # each tenant has its own allowance


def test_the_team_page_costs_the_same_queries_for_30_more_members(owner: Persona) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = session_client_for(owner)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/team/acme/").status_code == 200
        return len(captured)

    few = queries()
    for _ in range(30):
        MembershipFactory.create(tenant=owner.tenant, role="agent")
    assert queries() == few

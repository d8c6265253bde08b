"""Spanish by default, English on request; compiled catalogs committed and current."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils import translation

from erp import i18n_compile
from erp.tenancy.models import Membership, Tenant

BASE_DIR = Path(__file__).resolve().parents[2]


# --- catalogs ---------------------------------------------------------------------------------
def test_committed_mo_files_match_their_po_files():
    assert {p.parent.parent.name for p in i18n_compile.po_files()} >= {"en", "es"}
    assert i18n_compile.stale() == []


def test_every_english_message_is_translated_and_none_is_fuzzy():
    with (BASE_DIR / "locale/en/LC_MESSAGES/django.po").open("rb") as handle:
        catalog = read_po(handle, locale="en")
    untranslated = [m.id for m in catalog if m.id and (not m.string or m.fuzzy)]
    assert untranslated == []
    assert len([m for m in catalog if m.id]) > 50


def test_check_reports_a_po_edited_without_recompiling(tmp_path):
    shutil.copytree(BASE_DIR / "locale", tmp_path / "locale")
    po = tmp_path / "locale/en/LC_MESSAGES/django.po"
    po.write_text(po.read_text().replace('msgstr "Not found."', 'msgstr "Nowhere to be found."'))
    assert i18n_compile.stale(tmp_path) == [
        "locale/en/LC_MESSAGES/django.mo: out of date (1 messages, e.g. 'No encontrado.')"
    ]
    (tmp_path / "locale/es/LC_MESSAGES/django.mo").unlink()
    assert "locale/es/LC_MESSAGES/django.mo: missing" in i18n_compile.stale(tmp_path)

    i18n_compile.compile_all(tmp_path)
    assert i18n_compile.stale(tmp_path) == []


def test_check_mode_exit_status(capsys):
    assert i18n_compile.main(["--check"]) == 0
    assert "up to date" in capsys.readouterr().out


# --- what a user sees -------------------------------------------------------------------------
@pytest.mark.django_db
def test_api_errors_are_spanish_by_default_and_english_on_request(client):
    spanish = client.get("/api/v1/tenant")
    english = client.get("/api/v1/tenant", HTTP_ACCEPT_LANGUAGE="en")

    assert spanish.status_code == english.status_code == 401
    assert spanish.json()["error"]["message"] == "Falta la autenticación: use una clave de API."
    assert english.json()["error"]["message"] == "Authentication is missing: use an API key."
    assert spanish["Content-Language"] == "es"
    assert english["Content-Language"] == "en"


@pytest.mark.django_db
def test_unknown_api_key_message_follows_the_language(client):
    headers = {"HTTP_AUTHORIZATION": "Bearer nope", "HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}
    response = client.get("/api/v1/tenant", **headers)
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid or revoked API key."


@pytest.mark.django_db
def test_admin_login_page_is_spanish_by_default_and_english_on_request(client):
    spanish = client.get("/admin/login/").content.decode()
    english = client.get("/admin/login/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert '<html lang="es"' in spanish
    assert "Agentes de IA — Administración" in spanish
    assert "Nombre de usuario" in spanish and "Contraseña" in spanish
    assert "Iniciar sesión" in spanish

    assert '<html lang="en"' in english
    assert "AI Agents — Administration" in english
    assert "Username" in english and "Password" in english and "Log in" in english
    assert "Django administration" not in english


@pytest.mark.django_db
def test_language_switcher_sets_the_language_for_later_pages(client):
    response = client.post("/i18n/setlang/", {"language": "en", "next": "/admin/login/"})
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/"

    page = client.get("/admin/login/").content.decode()
    assert "AI Agents — Administration" in page


def test_tenant_model_names_are_translated():
    meta = Tenant._meta
    with translation.override("es"):
        assert (str(meta.verbose_name), str(meta.verbose_name_plural)) == ("empresa", "empresas")
        assert str(meta.get_field("timezone").verbose_name) == "zona horaria"
        assert str(Membership.Role.OWNER.label) == "propietario"
    with translation.override("en"):
        assert (str(meta.verbose_name), str(meta.verbose_name_plural)) == ("company", "companies")
        assert str(meta.get_field("timezone").verbose_name) == "time zone"
        assert str(meta.get_field("ai_credit_balance_usd").verbose_name) == (
            "AI credit balance (USD)"
        )
        assert str(Membership.Role.OWNER.label) == "owner"


@pytest.mark.parametrize(
    ("language", "skip_link", "button"),
    [("es", "Saltar al contenido", "Cambiar idioma"), ("en", "Skip to content", "Change language")],
)
def test_base_layout_is_accessible_and_switches_language(language, skip_link, button):
    request = RequestFactory().get("/correo/?x=1")
    with translation.override(language):
        html = render_to_string("base.html", request=request)

    assert f'<html lang="{language}">' in html
    assert skip_link in html and button in html
    assert 'action="/i18n/setlang/" method="post"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert '<input type="hidden" name="next" value="/correo/?x=1">' in html
    assert '<label for="language-select">' in html
    assert f'<option value="{language}" lang="{language}" selected>' in html
    assert "http://" not in html and "https://" not in html  # no external CDN

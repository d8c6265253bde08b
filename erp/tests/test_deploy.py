"""The production files (docker-compose.yml, Dockerfile, env.example) cannot rot silently.

The checks (erp/tests/deploy_checks.py) return lists of problems: the first tests run them on the
real files, the last ones feed them broken copies to prove that they do fail.
"""

from __future__ import annotations

import copy
import re

import pytest

from erp.tests.deploy_checks import (
    APP_SERVICES,
    DOCKERFILE,
    ENV_EXAMPLE,
    INFRA_SERVICES,
    PRODUCTION_VARS,
    compose_problems,
    dockerfile_problems,
    env_example_problems,
    interpolate,
    load_compose,
    settings_problems,
)


# --- tests -----------------------------------------------------------------------------------
def test_compose_services_commands_and_variables_match_the_code():
    assert compose_problems(load_compose()) == []


def test_every_setting_erp_reads_is_wired_into_compose():
    assert settings_problems(load_compose()) == []


def test_env_example_documents_every_variable_compose_uses():
    assert env_example_problems(load_compose(), ENV_EXAMPLE.read_text()) == []


def test_dockerfile_serves_the_same_app_on_the_exposed_port():
    assert dockerfile_problems(DOCKERFILE.read_text(), load_compose()) == []


def test_the_web_command_names_a_real_asgi_application():
    from erp import asgi

    assert callable(asgi.application)


def test_database_url_defaults_resolve_to_the_db_service():
    compose = load_compose()
    env = {"POSTGRES_PASSWORD": "s3cret", "DATABASE_APP_PASSWORD": "app"}
    url = interpolate(compose["x-app-env"]["DATABASE_URL"], env)
    assert url == "postgresql://erp_app:app@db:5432/erp"
    migrate = compose["services"]["migrate"]["environment"]
    assert interpolate(migrate["DATABASE_URL"], env) == "postgresql://erp:s3cret@db:5432/erp"
    assert migrate["DATABASE_APP_PASSWORD"] == compose["x-app-env"]["DATABASE_APP_PASSWORD"]
    with pytest.raises(ValueError, match="DATABASE_APP_PASSWORD"):
        interpolate(compose["x-app-env"]["DATABASE_URL"], {"POSTGRES_PASSWORD": "s3cret"})
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        interpolate(migrate["DATABASE_URL"], {"DATABASE_APP_PASSWORD": "app"})


def test_an_app_service_connecting_as_the_owner_is_reported():
    compose = load_compose()
    owner_url = compose["services"]["migrate"]["environment"]["DATABASE_URL"]
    compose["services"]["web"]["environment"] = {
        **compose["x-app-env"],
        "DATABASE_URL": owner_url,
    }
    assert compose_problems(compose) == ["web connects as 'erp' (owner: 'erp')"]


# --- the checks do fail ------------------------------------------------------------------------
@pytest.mark.parametrize("service", sorted(INFRA_SERVICES | APP_SERVICES))
def test_a_dropped_service_is_reported(service):
    compose = load_compose()
    del compose["services"][service]
    assert compose_problems(compose) == [f"missing services: ['{service}']"]


@pytest.mark.parametrize("var", PRODUCTION_VARS)
def test_a_dropped_variable_is_reported(var):
    compose = load_compose()
    compose["services"]["worker-bulk"]["environment"] = {
        k: v for k, v in compose["x-app-env"].items() if k != var
    }
    assert compose_problems(compose) == [f"worker-bulk lacks {var}"]


def test_wrong_commands_and_wiring_are_reported():
    compose = load_compose()
    services = compose["services"]
    services["worker-bulk"]["command"] = ["celery", "-A", "erp", "worker", "-Q", "realtime,bulk"]
    services["beat"]["command"] = ["celery", "-A", "erp", "worker"]
    services["web"]["command"] = ["gunicorn", "erp.wsgi"]
    env = copy.deepcopy(compose["x-app-env"])
    env["REDIS_URL"] = "redis://localhost:6379/0"
    services["web"]["environment"] = env
    services["worker-realtime"]["depends_on"] = {"db": {"condition": "service_started"}}
    problems = compose_problems(compose)
    assert "worker-bulk consumes ['bulk', 'realtime']" in problems  # sorted: no set order
    assert "beat runs ['celery', '-A', 'erp', 'worker']" in problems
    assert "web runs ['gunicorn', 'erp.wsgi'], not uvicorn erp.asgi:application" in problems
    assert "web: REDIS_URL does not point at the redis service" in problems
    assert "worker-realtime does not wait for db (service_healthy)" in problems
    assert "worker-realtime does not wait for migrate (service_completed_successfully)" in problems


def test_a_setting_missing_from_compose_is_reported():
    compose = load_compose()
    del compose["x-app-env"]["AI_CREDITS_MODE"]
    assert settings_problems(compose) == [
        "erp/settings.py reads AI_CREDITS_MODE, which compose never sets"
    ]


def test_an_undocumented_variable_is_reported():
    example = ENV_EXAMPLE.read_text().replace("\nSECRET_KEY=", "\n# SECRET_KEY=")
    assert env_example_problems(load_compose(), example) == [
        "env.example does not list the required SECRET_KEY"
    ]
    example = re.sub(r"(?m)^ZOHO_MAIL_BASE_URL=.*\n", "", ENV_EXAMPLE.read_text())
    assert env_example_problems(load_compose(), example) == [
        "env.example does not document ZOHO_MAIL_BASE_URL"
    ]


def test_dockerfile_disagreements_are_reported():
    text = DOCKERFILE.read_text()
    compose = load_compose()
    other_port = dockerfile_problems(text.replace("EXPOSE 8000", "EXPOSE 8080"), compose)
    assert other_port == ["ports disagree: CMD 8000, EXPOSE ['8080'], compose PORT 8000"]
    as_root = dockerfile_problems(text.replace("USER app", "USER root"), compose)
    assert as_root == ["the image runs as root"]
    wsgi = dockerfile_problems(text.replace("uvicorn erp.asgi", "uvicorn erp.wsgi"), compose)
    assert len(wsgi) == 1 and wsgi[0].startswith("CMD does not serve erp.asgi")
    trusting = dockerfile_problems(text.replace("--no-proxy-headers", "--proxy-headers"), compose)
    assert trusting == ["CMD must run uvicorn with --no-proxy-headers"]


def test_a_web_server_trusting_forwarded_headers_is_reported():
    compose = load_compose()
    web = compose["services"]["web"]
    web["command"] = [
        "--proxy-headers" if arg == "--no-proxy-headers" else arg for arg in web["command"]
    ]
    assert compose_problems(compose) == ["web must run with --no-proxy-headers"]
    web["command"] = [*web["command"], "--no-proxy-headers", "--forwarded-allow-ips", "*"]
    assert compose_problems(compose) == ["web must run with --no-proxy-headers"]


@pytest.mark.parametrize(
    "path",
    [
        "/static/admin/css/base.css",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css",
    ],
)
def test_static_files_are_served_without_debug(client, settings, path):
    # uvicorn serves no static files: without WhiteNoise the admin and API docs are unstyled.
    assert settings.DEBUG is False
    response = client.get(path)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")

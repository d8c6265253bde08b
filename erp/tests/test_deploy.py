"""The production files (docker-compose.yml, Dockerfile, env.example) cannot rot silently.

Docker does not run here, so the compose file is parsed and checked against the code: the
services, their commands, the contract's environment variables, the queues that Celery
declares and the settings that erp/settings.py reads. The checks are functions returning a list
of problems; the last tests feed them broken copies to prove that they do fail.
"""

from __future__ import annotations

import ast
import copy
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from erp.env import database_from_url

BASE_DIR = Path(__file__).resolve().parents[2]
COMPOSE = BASE_DIR / "docker-compose.yml"
DOCKERFILE = BASE_DIR / "Dockerfile"
ENV_EXAMPLE = BASE_DIR / "env.example"

# ../shared/CONTRACT.md "Settings", plus the encryption keys and JSON logs production needs.
CONTRACT_VARS = [
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DEBUG",
    "PORT",
    "GOOGLE_AI_API_KEY",
    "GOOGLE_AI_BASE_URL",
    "LLM_DEFAULT_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "WHATSAPP_APP_SECRET",
    "WHATSAPP_VERIFY_TOKEN",
    "WHATSAPP_GRAPH_BASE_URL",
    "ZOHO_CLIENT_ID",
    "ZOHO_CLIENT_SECRET",
    "ZOHO_ACCOUNTS_BASE_URL",
    "ZOHO_MAIL_BASE_URL",
    "CF_ACCESS_TEAM_DOMAIN",
    "CF_ACCESS_AUD",
    "EMAIL_URL",
    "FIELD_ENCRYPTION_KEYS",
    "LOG_FORMAT",
]
# Read by erp/settings.py but deliberately not passed by compose: the embedded run's own
# variables, and Django's EMAIL_* (production sets EMAIL_URL instead).
NOT_FOR_COMPOSE = {
    "ERP_DATA_DIR",
    "ERP_EMBEDDED",
    "ERP_TESTING",
    "EMAIL_BACKEND",
    "EMAIL_HOST",
    "EMAIL_PORT",
    "EMAIL_HOST_USER",
    "EMAIL_HOST_PASSWORD",
    "EMAIL_USE_TLS",
    # Set by the Dockerfile itself (static files collected at build time).
    "STATIC_MANIFEST",
    "STATIC_ROOT",
}
INFRA_SERVICES = {"db", "redis"}
APP_SERVICES = {"migrate", "web", "worker-realtime", "worker-bulk", "beat"}
LONG_RUNNING_APP_SERVICES = APP_SERVICES - {"migrate"}

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


# --- helpers ---------------------------------------------------------------------------------
def load_compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's `${NAME}`, `${NAME:-default}` and `${NAME:?error}` (and `$$`)."""

    def replace(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        current = env.get(name)
        if op in {":-", "-"}:
            unset = current is None or (op == ":-" and current == "")
            return arg if unset else str(current)
        if op in {":?", "?"}:
            if current is None or (op == ":?" and current == ""):
                raise ValueError(f"{name}: {arg}")
            return current
        return current or ""

    return _VAR.sub(replace, value.replace("$$", "\0")).replace("\0", "$")


def default_of(value: str) -> str:
    """The value with every variable at its default (required ones get a placeholder)."""
    names = {m["name"] for m in _VAR.finditer(value) if m["op"] in {":?", "?"}}
    return interpolate(value, dict.fromkeys(names, f"required-{len(names)}"))


def command(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command", [])
    return shlex.split(cmd) if isinstance(cmd, str) else [str(part) for part in cmd]


def option(argv: list[str], *names: str) -> str | None:
    for index, arg in enumerate(argv):
        for name in names:
            if arg == name and index + 1 < len(argv):
                return argv[index + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def celery_subcommand(argv: list[str]) -> str | None:
    if argv[:3] != ["celery", "-A", "erp"] or len(argv) < 4:
        return None
    return argv[3]


def declared_queues() -> set[str]:
    from django.conf import settings

    from erp.celery import app

    from_app = {queue.name for queue in app.conf.task_queues}
    assert settings.CELERY_TASK_DEFAULT_QUEUE in from_app
    return from_app


def task_queues() -> dict[str, str]:
    """The queue each registered task is sent to (task_routes, or the task's own options)."""
    from erp.celery import app

    app.loader.import_default_modules()
    queues: dict[str, str] = {}
    for name, task in app.tasks.items():
        if name.startswith("celery."):
            continue
        options = dict(task._get_exec_options())  # type: ignore[attr-defined]  # Celery-private
        queues[name] = app.amqp.router.route(options, name, (), {})["queue"].name
    return queues


def settings_env_names() -> set[str]:
    """Names of the environment variables erp/settings.py reads (env_str("NAME"), ...)."""
    tree = ast.parse((BASE_DIR / "erp" / "settings.py").read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.startswith("env_")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


# --- the checks ------------------------------------------------------------------------------
def compose_problems(compose: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    services: dict[str, Any] = compose.get("services", {})
    missing = (INFRA_SERVICES | APP_SERVICES) - set(services)
    if missing:
        return [f"missing services: {sorted(missing)}"]

    db, redis = services["db"], services["redis"]
    if db.get("image") != "pgvector/pgvector:pg18":
        problems.append(f"db image is {db.get('image')!r}")
    if "pg_isready" not in str(db.get("healthcheck", {}).get("test")):
        problems.append("db has no pg_isready healthcheck")
    # PostgreSQL 18 images refuse a volume at /var/lib/postgresql/data.
    if not any(str(v).endswith(":/var/lib/postgresql") for v in db.get("volumes", [])):
        problems.append("db data volume is not mounted at /var/lib/postgresql")
    if not str(redis.get("image", "")).startswith("redis:7"):
        problems.append(f"redis image is {redis.get('image')!r}")
    if "ping" not in str(redis.get("healthcheck", {}).get("test")):
        problems.append("redis has no ping healthcheck")

    shared_env = compose.get("x-app-env") or {}
    for var in CONTRACT_VARS:
        if var not in shared_env:
            problems.append(f"x-app-env lacks {var}")
    images = set()
    for name in sorted(APP_SERVICES):
        service = services[name]
        images.add((service.get("image"), str(service.get("build"))))
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.split("=", 1) for item in env)
        for var in CONTRACT_VARS:
            if var not in env:
                problems.append(f"{name} lacks {var}")
        database_url = env.get("DATABASE_URL", "")
        if database_url and database_from_url(default_of(database_url))["HOST"] != "db":
            problems.append(f"{name}: DATABASE_URL does not point at the db service")
        redis_url = env.get("REDIS_URL", "")
        if redis_url and urlsplit(default_of(redis_url)).hostname != "redis":
            problems.append(f"{name}: REDIS_URL does not point at the redis service")
        if name == "migrate":
            continue
        depends = service.get("depends_on") or {}
        expected = {
            "db": "service_healthy",
            "redis": "service_healthy",
            "migrate": "service_completed_successfully",
        }
        for dependency, condition in expected.items():
            got = depends.get(dependency, {}) if isinstance(depends, dict) else {}
            if got.get("condition") != condition:
                problems.append(f"{name} does not wait for {dependency} ({condition})")
    if len(images) != 1:
        problems.append(f"app services run different images: {sorted(map(str, images))}")

    # Row-level security: only migrate connects as the owner; the others as the app's role.
    owner = default_of(str((db.get("environment") or {}).get("POSTGRES_USER", "")))
    for name in sorted(APP_SERVICES):
        url = (services[name].get("environment") or {}).get("DATABASE_URL", "")
        user = database_from_url(default_of(url))["USER"] if url else None
        if (name == "migrate") != (user == owner):
            problems.append(f"{name} connects as {user!r} (owner: {owner!r})")

    migrate = services["migrate"]
    if command(migrate) != ["python", "manage.py", "migrate", "--noinput"]:
        problems.append(f"migrate runs {command(migrate)}")
    if str(migrate.get("restart", "no")) != "no":
        problems.append("migrate must be one-shot (restart: no)")
    if (migrate.get("depends_on") or {}).get("db", {}).get("condition") != "service_healthy":
        problems.append("migrate does not wait for a healthy db")

    web = command(services["web"])
    if web[:2] != ["uvicorn", "erp.asgi:application"]:
        problems.append(f"web runs {web[:2]}, not uvicorn erp.asgi:application")
    if option(web, "--host") != "0.0.0.0":
        problems.append("web must listen on 0.0.0.0")
    # uvicorn's X-Forwarded-For handling trusts what any allowed peer sends; the app reads the
    # client's address itself, as TRUSTED_PROXY_HOPS says.
    if "--no-proxy-headers" not in web or {"--proxy-headers", "--forwarded-allow-ips"} & set(web):
        problems.append("web must run with --no-proxy-headers")
    if option(web, "--port") != "${PORT:-8000}":
        problems.append(f"web listens on {option(web, '--port')}, not ${{PORT:-8000}}")
    if "healthz" not in str(services["web"].get("healthcheck", {}).get("test")):
        problems.append("web has no /healthz healthcheck")

    worker_queues: dict[str, set[str]] = {}
    for name in ("worker-realtime", "worker-bulk"):
        argv = command(services[name])
        queues = option(argv, "-Q", "--queues")
        if celery_subcommand(argv) != "worker" or not queues:
            problems.append(f"{name} is not a celery worker with -Q: {argv}")
            continue
        worker_queues[name] = set(queues.split(","))
    if worker_queues.get("worker-realtime") != {"realtime"}:
        problems.append(
            f"worker-realtime consumes {sorted(worker_queues.get('worker-realtime', []))}"
        )
    if worker_queues.get("worker-bulk") != {"bulk"}:
        problems.append(f"worker-bulk consumes {sorted(worker_queues.get('worker-bulk', []))}")
    consumed = set().union(*worker_queues.values()) if worker_queues else set()
    if consumed != declared_queues():
        problems.append(f"workers consume {consumed}, Celery declares {declared_queues()}")
    for task, queue in task_queues().items():
        if queue not in consumed:
            problems.append(f"task {task} goes to queue {queue!r} that no worker consumes")

    beat = command(services["beat"])
    if celery_subcommand(beat) != "beat":
        problems.append(f"beat runs {beat}")
    if int((services["beat"].get("deploy") or {}).get("replicas", 1)) != 1:
        problems.append("beat must run exactly once")
    for name in LONG_RUNNING_APP_SERVICES - {"beat"}:
        if celery_subcommand(command(services[name])) == "beat":
            problems.append(f"{name} also runs beat")
    return problems


def settings_problems(compose: dict[str, Any]) -> list[str]:
    shared_env = compose.get("x-app-env") or {}
    unwired = settings_env_names() - set(shared_env) - NOT_FOR_COMPOSE
    return [f"erp/settings.py reads {name}, which compose never sets" for name in sorted(unwired)]


def env_example_problems(compose: dict[str, Any], example: str) -> list[str]:
    problems: list[str] = []
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", example, flags=re.MULTILINE))
    set_lines = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", example, flags=re.MULTILINE))
    for match in _VAR.finditer(yaml.safe_dump(compose)):
        name = match["name"]
        if name not in documented:
            problems.append(f"env.example does not document {name}")
        if match["op"] in {":?", "?"} and name not in set_lines:
            problems.append(f"env.example does not list the required {name}")
    return sorted(set(problems))


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def dockerfile_problems(text: str, compose: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    instructions = dockerfile_instructions(text)
    by_kind: dict[str, list[str]] = {}
    for keyword, rest in instructions:
        by_kind.setdefault(keyword, []).append(rest)
    if by_kind.get("FROM", [""])[0] != "python:3.11-slim":
        problems.append(f"base image is {by_kind.get('FROM')}")
    runs = " ".join(by_kind.get("RUN", []))
    copies = " ".join(by_kind.get("COPY", []))
    if "pip install" not in runs or not re.search(r"pyproject\.toml|(^|\s)\.\s", copies):
        problems.append("the image does not pip install the project from pyproject.toml")
    if "collectstatic --noinput" not in runs:
        problems.append("the image does not collect static files at build")
    users = by_kind.get("USER", [])
    if not users or users[-1] in {"root", "0"}:
        problems.append("the image runs as root")
    exposed = [port.split("/")[0] for line in by_kind.get("EXPOSE", []) for port in line.split()]
    cmds = by_kind.get("CMD", []) + by_kind.get("ENTRYPOINT", [])
    if not cmds:
        return [*problems, "no CMD"]
    cmd_text = " ".join(cmds)
    if "uvicorn erp.asgi:application" not in cmd_text:
        problems.append(f"CMD does not serve erp.asgi with uvicorn: {cmd_text}")
    if "--no-proxy-headers" not in cmd_text or re.search(r"(?<!-no)-proxy-headers", cmd_text):
        problems.append("CMD must run uvicorn with --no-proxy-headers")
    port = re.search(r"--port\s+\\?\"?\$\{PORT:-(\d+)\}", cmd_text) or re.search(
        r"--port\s+\"?,?\s*\"?(\d+)", cmd_text
    )
    cmd_port = port.group(1) if port else None
    compose_port = default_of(str((compose.get("x-app-env") or {}).get("PORT", "")))
    if not (cmd_port and exposed == [cmd_port] and compose_port == cmd_port):
        problems.append(
            f"ports disagree: CMD {cmd_port}, EXPOSE {exposed}, compose PORT {compose_port}"
        )
    return problems


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


@pytest.mark.parametrize("var", CONTRACT_VARS)
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

"""The checks behind test_deploy.py: each reads a production file and returns its problems.

Docker does not run here, so the compose file is parsed and checked against the code: the
services, their commands, the contract's environment variables, the queues that Celery
declares and the settings that erp/settings.py reads.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from erp.env import database_from_url

BASE_DIR = Path(__file__).resolve().parents[2]
COMPOSE = BASE_DIR / "docker-compose.yml"
DOCKERFILE = BASE_DIR / "Dockerfile"
ENV_EXAMPLE = BASE_DIR / "env.example"

# The settings of the production contract, plus the encryption keys and JSON logs it needs.
PRODUCTION_VARS = [
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
        options = dict(task._get_exec_options())  # type: ignore[attr-defined]  # Celery private, no public equivalent
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
        ):
            names.add(str(node.args[0].value))
    return names


# --- the checks ------------------------------------------------------------------------------
def compose_problems(compose: dict[str, Any]) -> list[str]:
    """Everything wrong with the compose file, or only the missing services if any are."""
    services: dict[str, Any] = compose.get("services", {})
    missing = (INFRA_SERVICES | APP_SERVICES) - set(services)
    if missing:
        return [f"missing services: {sorted(missing)}"]
    return [
        *_infra_problems(services),
        *_app_wiring_problems(compose, services),
        *_database_role_problems(services),
        *_migrate_problems(services["migrate"]),
        *_web_problems(services["web"]),
        *_worker_problems(services),
        *_beat_problems(services),
    ]


def _infra_problems(services: dict[str, Any]) -> list[str]:
    problems: list[str] = []
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
    return problems


def _app_wiring_problems(compose: dict[str, Any], services: dict[str, Any]) -> list[str]:
    """The contract's variables reach every app service, on one image, after db/redis/migrate."""
    shared_env = compose.get("x-app-env") or {}
    problems = [f"x-app-env lacks {var}" for var in PRODUCTION_VARS if var not in shared_env]
    images = set()
    for name in sorted(APP_SERVICES):
        service = services[name]
        images.add((service.get("image"), str(service.get("build"))))
        problems += _service_env_problems(name, service)
        if name != "migrate":
            problems += _dependency_problems(name, service)
    if len(images) != 1:
        problems.append(f"app services run different images: {sorted(map(str, images))}")
    return problems


def _service_env_problems(name: str, service: dict[str, Any]) -> list[str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    problems = [f"{name} lacks {var}" for var in PRODUCTION_VARS if var not in env]
    database_url = env.get("DATABASE_URL", "")
    if database_url and database_from_url(default_of(database_url))["HOST"] != "db":
        problems.append(f"{name}: DATABASE_URL does not point at the db service")
    redis_url = env.get("REDIS_URL", "")
    if redis_url and urlsplit(default_of(redis_url)).hostname != "redis":
        problems.append(f"{name}: REDIS_URL does not point at the redis service")
    return problems


def _dependency_problems(name: str, service: dict[str, Any]) -> list[str]:
    depends = service.get("depends_on") or {}
    expected = {
        "db": "service_healthy",
        "redis": "service_healthy",
        "migrate": "service_completed_successfully",
    }
    problems: list[str] = []
    for dependency, condition in expected.items():
        got = depends.get(dependency, {}) if isinstance(depends, dict) else {}
        if got.get("condition") != condition:
            problems.append(f"{name} does not wait for {dependency} ({condition})")
    return problems


def _database_role_problems(services: dict[str, Any]) -> list[str]:
    """Row-level security: only migrate connects as the owner; the others as the app's role."""
    owner = default_of(str((services["db"].get("environment") or {}).get("POSTGRES_USER", "")))
    problems: list[str] = []
    for name in sorted(APP_SERVICES):
        url = (services[name].get("environment") or {}).get("DATABASE_URL", "")
        user = database_from_url(default_of(url))["USER"] if url else None
        if (name == "migrate") != (user == owner):
            problems.append(f"{name} connects as {user!r} (owner: {owner!r})")
    return problems


def _migrate_problems(migrate: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if command(migrate) != ["python", "manage.py", "migrate", "--noinput"]:
        problems.append(f"migrate runs {command(migrate)}")
    if str(migrate.get("restart", "no")) != "no":
        problems.append("migrate must be one-shot (restart: no)")
    if (migrate.get("depends_on") or {}).get("db", {}).get("condition") != "service_healthy":
        problems.append("migrate does not wait for a healthy db")
    return problems


def _web_problems(service: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    web = command(service)
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
    if "healthz" not in str(service.get("healthcheck", {}).get("test")):
        problems.append("web has no /healthz healthcheck")
    return problems


def _worker_problems(services: dict[str, Any]) -> list[str]:
    """One worker per queue, together consuming every queue Celery declares or routes to."""
    problems: list[str] = []
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
    return problems


def _beat_problems(services: dict[str, Any]) -> list[str]:
    problems: list[str] = []
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

"""Typed readers for environment variables. Only `erp.settings` should call these.

Each reader fails loudly with the variable's name when the value cannot be parsed, so a
typo in a deployment never turns silently into a default.
"""

from __future__ import annotations

import os
from typing import Any, overload
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit


class ImproperlyConfiguredEnv(RuntimeError):
    pass


@overload
def env_str(name: str) -> str | None: ...
@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: str | None) -> str | None: ...


def env_str(name: str, default: str | None = None) -> str | None:
    """The variable's value; unset or empty gives `default` (a str default gives a str)."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfiguredEnv(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name} must be an integer, got {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, Any]:
    """Django DATABASES entry from `postgresql://user:pass@host:port/name?host=/socket/dir`."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ImproperlyConfiguredEnv(
            f"DATABASE_URL must start with postgresql://, got scheme {parts.scheme!r}"
        )
    query = parse_qs(parts.query)
    host = query.get("host", [parts.hostname or ""])[0]
    port = parts.port or (query.get("port", [""])[0])
    options = {k: v[0] for k, v in query.items() if k not in {"host", "port"}}
    return {
        # Django's PostgreSQL backend + the tenant scope of each transaction (row-level security).
        "ENGINE": "erp.tenancy.postgres",
        "NAME": unquote(parts.path.lstrip("/")) or "postgres",
        "USER": unquote(parts.username or "postgres"),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(port or ""),
        "OPTIONS": options,
        # Persistent connections are the caller's choice (settings: a pool, or CONN_MAX_AGE).
        "CONN_MAX_AGE": 0,
    }


def database_url_as(url: str, user: str, password: str = "") -> str:
    """The same database URL with another role (the application's, beside the owner's)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    return urlunsplit(parts._replace(netloc=f"{auth}@{host}"))


def email_from_url(url: str) -> dict[str, object]:
    """Django EMAIL_* settings from `smtp://user:pass@host:port?tls=1` (or `console://`)."""
    parts = urlsplit(url)
    if parts.scheme == "console":
        return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
    if parts.scheme == "locmem":
        return {"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"}
    if parts.scheme not in {"smtp", "smtps"}:
        raise ImproperlyConfiguredEnv(
            f"EMAIL_URL must be smtp://, smtps://, console:// or locmem://, got {parts.scheme!r}"
        )
    query = parse_qs(parts.query)
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": parts.hostname or "localhost",
        "EMAIL_PORT": parts.port or (465 if parts.scheme == "smtps" else 25),
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_SSL": parts.scheme == "smtps",
        "EMAIL_USE_TLS": query.get("tls", ["0"])[0] in {"1", "true"},
    }

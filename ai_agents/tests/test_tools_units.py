from collections.abc import Iterator
from typing import Any

import pytest

from ai_agents.tools.http_tool import HttpToolConfig, execute_http_tool, validate_http_tool_config
from ai_agents.tools.registry import (
    ToolRegistry,
    ToolResult,
    ToolSpec,
    truncate,
    validate_args,
    validate_schema,
)
from erp.testing.fake_http import FakeResponse, FakeServer

SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "maxLength": 20},
        "qty": {"type": "integer"},
        "price": {"type": "number"},
        "express": {"type": "boolean"},
        "status": {"type": "string", "enum": ["open", "closed"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "extra": {"type": "object"},
    },
    "required": ["order_id"],
}


# --- validator -----------------------------------------------------------------------------------
def test_valid_arguments() -> None:
    args = {
        "order_id": "A1",
        "qty": 2,
        "price": 9.5,
        "express": False,
        "status": "open",
        "tags": ["x"],
    }
    assert validate_args(SCHEMA, args) == []
    assert validate_args(SCHEMA, {"order_id": "A1", "qty": 3.0}) == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({}, "falta «order_id»"),
        ({"order_id": 5}, "order_id: debe ser un texto"),
        ({"order_id": "x" * 21}, "order_id: máximo 20 caracteres"),
        ({"order_id": "a", "qty": 1.5}, "qty: debe ser un número entero"),
        ({"order_id": "a", "qty": True}, "qty: debe ser un número entero"),
        ({"order_id": "a", "price": "1"}, "price: debe ser un número"),
        ({"order_id": "a", "express": "yes"}, "express: debe ser verdadero o falso"),
        ({"order_id": "a", "status": "lost"}, "valor no permitido (use uno de: open, closed)"),
        ({"order_id": "a", "tags": ["x", 1]}, "tags[1]: debe ser un texto"),
        ({"order_id": "a", "extra": []}, "extra: debe ser un objeto"),
        ([], "debe ser un objeto"),
    ],
)
def test_invalid_arguments(args: Any, fragment: str) -> None:
    errors = validate_args(SCHEMA, args)
    assert any(fragment in e for e in errors), errors


def test_additional_properties_false() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    }
    assert validate_args(schema, {"a": "x"}) == []
    assert any("b: argumento no permitido" in e for e in validate_args(schema, {"b": 1}))


def test_validate_schema_subset() -> None:
    assert validate_schema(SCHEMA) == []
    errors = validate_schema(
        {"type": "object", "properties": {"a": {"type": "date", "pattern": "x"}}, "required": "a"}
    )
    assert any("claves no soportadas: pattern" in e for e in errors)
    assert any("tipo «date» no soportado" in e for e in errors)
    assert any("«required» debe ser una lista" in e for e in errors)
    assert validate_schema("x") != []


def test_truncate() -> None:
    assert truncate("abc", 5) == "abc"
    cut = truncate("x" * 100, 30)
    assert len(cut) == 30 and cut.endswith("[truncado]")


# --- registry ------------------------------------------------------------------------------------
def test_registry_register_get_specs_for_and_run() -> None:
    reg = ToolRegistry()
    spec = ToolSpec(
        "echo",
        "Repite",
        {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"]},
    )
    calls: list[dict[str, Any]] = []

    def echo(args: dict[str, Any], **ctx: Any) -> ToolResult:
        calls.append({"args": args, **ctx})
        return ToolResult(ok=True, content=args["t"] * 10, data={"t": args["t"]})

    reg.register(spec, echo)
    reg.register(ToolSpec("boom", "Falla"), lambda args, **ctx: 1 / 0)  # type: ignore[arg-type]  # it raises
    assert reg.get("echo") is not None and reg.get("nope") is None
    assert [s.name for s in reg.specs_for(["boom", "nope", "echo", "echo"])] == ["boom", "echo"]

    ok = reg.run("echo", {"t": "ab"}, max_content_chars=5, tenant="T")
    assert ok.ok and ok.content == "ababa" and ok.data == {"t": "ab"}
    assert calls == [{"args": {"t": "ab"}, "tenant": "T"}]

    bad = reg.run("echo", {"t": 1})
    assert not bad.ok and "debe ser un texto" in (bad.error or "")
    assert len(calls) == 1  # invalid args never reach the handler

    crashed = reg.run("boom", {})
    assert not crashed.ok and "ZeroDivisionError" in (crashed.error or "")
    assert not reg.run("nope", {}).ok


def test_registry_refuses_duplicates_and_bad_schemas() -> None:
    reg = ToolRegistry()
    reg.register(ToolSpec("a", "A"), lambda args: ToolResult(ok=True))
    with pytest.raises(ValueError):
        reg.register(ToolSpec("a", "A"), lambda args: ToolResult(ok=True))
    with pytest.raises(ValueError):
        reg.register(ToolSpec("b", "B", {"type": "date"}), lambda args: ToolResult(ok=True))


# --- HTTP tool -----------------------------------------------------------------------------------
@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def private_ok(settings: Any) -> None:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True


def config(server: FakeServer, **kw: Any) -> HttpToolConfig:
    base: dict[str, Any] = {
        "method": "GET",
        "url_template": server.url + "/orders/{order_id}",
        "headers": {"Authorization": "Bearer s3cret"},
        "args_schema": SCHEMA,
        "timeout_ms": 2000,
        "max_response_chars": 200,
    }
    base.update(kw)
    return HttpToolConfig(**base)


def test_get_round_trip_with_encoded_path_and_query(server: FakeServer, private_ok: None) -> None:
    server.route("GET", r"/orders/.*", FakeResponse.json({"status": "enviado", "eta": "mañana"}))
    result = execute_http_tool(
        config(server), {"order_id": "A/17 ?x", "express": True, "tags": ["a", "b"], "qty": 2}
    )
    assert result.ok, result.error
    assert result.data == {"status": "enviado", "eta": "mañana"}
    assert result.content == '{"status":"enviado","eta":"mañana"}'
    request = server.requests[0]
    assert request.path == "/orders/A%2F17%20%3Fx"
    assert request.query == {"express": ["true"], "tags": ["a", "b"], "qty": ["2"]}
    assert request.header("authorization") == "Bearer s3cret"


def test_post_sends_json_body(server: FakeServer, private_ok: None) -> None:
    server.route("POST", r"/orders/A1", FakeResponse.json({"ok": True}, status=201))
    result = execute_http_tool(
        config(server, method="post"), {"order_id": "A1", "qty": 3, "extra": {"k": "v"}}
    )
    assert result.ok and result.data == {"ok": True}
    assert server.requests[0].json() == {"qty": 3, "extra": {"k": "v"}}
    assert server.requests[0].query == {}


def test_private_destination_refused_without_setting(server: FakeServer, settings: Any) -> None:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = False
    server.route("GET", r"/orders/.*", FakeResponse.json({}))
    result = execute_http_tool(config(server), {"order_id": "A1"})
    assert not result.ok and "Destino no permitido" in (result.error or "")
    assert server.requests == []


def test_response_truncated(server: FakeServer, private_ok: None) -> None:
    server.route(
        "GET",
        r"/orders/.*",
        FakeResponse(body=("x" * 5000).encode(), headers={"Content-Type": "text/plain"}),
    )
    result = execute_http_tool(config(server, max_response_chars=100), {"order_id": "A1"})
    assert result.ok and len(result.content) == 100 and result.content.endswith("[truncado]")
    assert result.data is None


def test_timeout_capped_by_tool_timeout(server: FakeServer, private_ok: None) -> None:
    server.route("GET", r"/orders/.*", FakeResponse.json({}, delay=10))
    result = execute_http_tool(
        config(server, timeout_ms=30_000), {"order_id": "A1"}, tool_timeout_ms=200
    )
    assert not result.ok
    assert "no respondió a tiempo" in (result.error or "")
    assert result.duration_ms < 3000  # the tool's 30 s and the server's 10 s did not count


def test_http_error_status(server: FakeServer, private_ok: None) -> None:
    server.route("GET", r"/orders/.*", FakeResponse.json({"error": "no existe"}, status=404))
    result = execute_http_tool(config(server), {"order_id": "A1"})
    assert not result.ok and "HTTP 404" in (result.error or "")
    assert "no existe" in result.content


def test_invalid_or_missing_arguments_never_call(server: FakeServer, private_ok: None) -> None:
    server.route("GET", r"/orders/.*", FakeResponse.json({}))
    assert not execute_http_tool(config(server), {"qty": 1}).ok
    assert not execute_http_tool(config(server), "nope").ok
    missing = execute_http_tool(
        config(server, url_template=server.url + "/x/{other}"), {"order_id": "a"}
    )
    assert not missing.ok and "other" in (missing.error or "")
    assert server.requests == []


def test_connection_refused_is_a_result(private_ok: None) -> None:
    with FakeServer() as fake:
        url = fake.url
    result = execute_http_tool(
        HttpToolConfig(method="GET", url_template=url + "/x", timeout_ms=500), {}
    )
    assert not result.ok and result.error


def test_validate_http_tool_config() -> None:
    good = HttpToolConfig(
        method="GET", url_template="https://api.example.com/o/{order_id}", args_schema=SCHEMA
    )
    assert validate_http_tool_config(good) == []
    bad = HttpToolConfig(
        method="TRACE",
        url_template="https://{host}/o/{nope}",
        args_schema={"type": "object", "properties": {"host": {"type": "string"}}},
        timeout_ms=0,
    )
    errors = validate_http_tool_config(bad)
    assert any("Método «TRACE»" in e for e in errors)
    assert any("solo pueden ir en la ruta" in e for e in errors)
    assert any("{nope}" in e for e in errors)
    assert any("tiempo de espera" in e for e in errors)
    assert validate_http_tool_config(HttpToolConfig(method="GET", url_template="ftp://x")) != []

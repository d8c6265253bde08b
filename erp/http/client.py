"""The one outbound HTTP client of the project (built on `requests`).

Every call to the outside world goes through `HttpClient` (API clients subclass it):

- explicit timeouts, always: `(connect, read)` seconds, default `HTTP_DEFAULT_TIMEOUT_SECONDS`;
- no redirects unless asked for (`follow_redirects=True`); each hop is checked again;
- a typed error taxonomy with a `retryable` flag, so retry decisions never parse messages;
- a response size cap (`max_bytes`, default `HTTP_MAX_RESPONSE_BYTES`), enforced while streaming;
- no cookie jar: nothing a server sets leaks into the next call (or the next tenant's);
- logs are event-style (method, redacted URL, status, duration); bodies are never logged and
  secrets (auth headers, `key`/`token`/... query params, JSON fields) are redacted in URLs and
  in the body excerpts that errors carry;
- an SSRF guard for URLs configured by tenants (`guard=True` per call or per client): http/https
  only; the host is resolved and every address must be public unless
  `HTTP_ALLOW_PRIVATE_NETWORKS` is on; the connection then goes to the address that was checked
  (pinned, so DNS rebinding between check and connect is useless) while the Host header, TLS SNI
  and certificate check keep using the hostname. Environment proxies are not used on guarded
  calls (a proxy would make the check meaningless).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import ProtocolError
from urllib3.exceptions import ReadTimeoutError as Urllib3ReadTimeout

from erp.http import guard
from erp.http.errors import (
    HttpBlockedDestination,
    HttpConnectionError,
    HttpError,
    HttpResponseTooLarge,
    HttpTimeout,
    HttpTooManyRedirects,
    status_error,
)
from erp.http.redact import SECRET_HEADERS, redact_url

logger = logging.getLogger("erp.http")

T = TypeVar("T")
TimeoutArg = float | tuple[float, float] | None

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "erp-ai-agents/0.1"
# Clients with `keep_alive`: one connection pool per class and process (see `_pool`).
_POOLS: dict[tuple[int, type], HTTPAdapter] = {}


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]  # case-insensitive (requests' structure)
    content: bytes
    url: str  # redacted: safe to log
    elapsed_ms: float

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


# --- The client --------------------------------------------------------------------------------
class HttpClient:
    """Subclass per API: set `base_url` and override `default_headers()` for auth.

    Non-2xx answers raise (`HttpClientError`, `HttpRateLimited`, `HttpServerError`) unless
    `raise_for_status=False`; a 3xx that is not followed is returned as it is.
    """

    base_url: str = ""
    guard: bool = False
    follow_redirects: bool = False
    max_redirects: int = 5
    verify: bool | str = True  # or a CA bundle path (private CAs, tests)
    # Reuse connections across instances (one operator-configured host called on every
    # message: a new TCP + TLS handshake each time costs more than the call). Unguarded only.
    keep_alive: bool = False

    def __init__(
        self,
        *,
        base_url: str | None = None,
        guard: bool | None = None,
        timeout: TimeoutArg = None,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if base_url is not None:
            self.base_url = base_url
        if guard is not None:
            self.guard = guard
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.headers = dict(headers or {})
        self._adapter = _pool(type(self)) if self.keep_alive else HTTPAdapter(max_retries=0)

    # Hooks for subclasses ------------------------------------------------------------------
    def default_headers(self) -> dict[str, str]:
        return {"User-Agent": USER_AGENT, **self.headers}

    def blocked_reason(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
        """The guard's address policy (override only to narrow it, or in tests)."""
        if settings.HTTP_ALLOW_PRIVATE_NETWORKS:
            return None
        return guard.address_blocked_reason(ip)

    # Public surface ------------------------------------------------------------------------
    def get(self, url: str, **kw: Any) -> HttpResponse:
        return self.request("GET", url, **kw)

    def post(self, url: str, **kw: Any) -> HttpResponse:
        return self.request("POST", url, **kw)

    def put(self, url: str, **kw: Any) -> HttpResponse:
        return self.request("PUT", url, **kw)

    def patch(self, url: str, **kw: Any) -> HttpResponse:
        return self.request("PATCH", url, **kw)

    def delete(self, url: str, **kw: Any) -> HttpResponse:
        return self.request("DELETE", url, **kw)

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: TimeoutArg = None,
        guard: bool | None = None,
        follow_redirects: bool | None = None,
        max_bytes: int | None = None,
        raise_for_status: bool = True,
    ) -> HttpResponse:
        method = method.upper()
        guarded = self.guard if guard is None else guard
        follow = self.follow_redirects if follow_redirects is None else follow_redirects
        cap = max_bytes or self.max_bytes or settings.HTTP_MAX_RESPONSE_BYTES
        timeouts = self._timeouts(timeout)
        merged = {**self.default_headers(), **(headers or {})}
        prepared = self._prepare(
            method, self._absolute(url), params=params, json_body=json, data=data, headers=merged
        )

        for _hop in range(self.max_redirects + 1):
            adapter = self._pinned_for(prepared) if guarded else None
            started = time.monotonic()
            try:
                raw = self._send(prepared, adapter=adapter, timeouts=timeouts, started=started)
                try:
                    status, location = raw.status_code, raw.headers.get("location")
                    if not (follow and status in REDIRECT_STATUSES and location):
                        return self._finish(
                            prepared, raw, started, cap=cap, raise_for_status=raise_for_status
                        )
                    self._log_done(prepared, status, started)
                finally:
                    raw.close()
            finally:
                if adapter is not None:
                    adapter.close()
            assert location is not None
            prepared = self._redirected(prepared, status, urljoin(str(prepared.url), location))
        raise HttpTooManyRedirects(
            f"more than {self.max_redirects} redirects",
            method=method,
            url=redact_url(str(prepared.url)),
        )

    # Internals -----------------------------------------------------------------------------
    def _absolute(self, url: str) -> str:
        if "://" in url or not self.base_url:
            return url
        return self.base_url.rstrip("/") + "/" + url.lstrip("/")

    def _timeouts(self, timeout: TimeoutArg) -> tuple[float, float]:
        value = timeout if timeout is not None else self.timeout
        if value is None:
            value = float(settings.HTTP_DEFAULT_TIMEOUT_SECONDS)
        return value if isinstance(value, tuple) else (float(value), float(value))

    def _prepare(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None,
        json_body: Any,
        data: Any,
        headers: Mapping[str, str],
    ) -> requests.PreparedRequest:
        try:
            return requests.Request(
                method, url, params=params, json=json_body, data=data, headers=dict(headers)
            ).prepare()
        except (requests.exceptions.RequestException, ValueError) as exc:
            raise HttpError(
                f"invalid URL: {type(exc).__name__}", method=method, url=redact_url(url)
            ) from None

    def _redirected(
        self, prepared: requests.PreparedRequest, status: int, location: str
    ) -> requests.PreparedRequest:
        new = prepared.copy()
        new.prepare_url(location, None)
        if status == 303 or (status in {301, 302} and prepared.method == "POST"):
            if prepared.method != "HEAD":
                new.method = "GET"
            new.body = None
            for name in ("Content-Length", "Content-Type", "Transfer-Encoding"):
                new.headers.pop(name, None)
        old, target = urlsplit(str(prepared.url)), urlsplit(location)
        if (old.scheme, old.hostname, old.port) != (target.scheme, target.hostname, target.port):
            # Credentials are for the origin they were given to, not for wherever it points.
            for name in list(new.headers):
                if name.lower() in SECRET_HEADERS:
                    del new.headers[name]
        return new

    def _send(
        self,
        prepared: requests.PreparedRequest,
        *,
        adapter: HTTPAdapter | None,
        timeouts: tuple[float, float],
        started: float,
    ) -> requests.Response:
        """One hop, headers only (the body is streamed by `_finish`)."""
        method, url = str(prepared.method), str(prepared.url)
        safe_url = redact_url(url)
        # Guarded calls go straight to the checked address: no environment proxy.
        proxies = {} if adapter is not None else requests.utils.get_environ_proxies(url)
        try:
            return (adapter or self._adapter).send(
                prepared, stream=True, timeout=timeouts, verify=self.verify, proxies=proxies
            )
        except requests.exceptions.Timeout as exc:
            error: HttpError = HttpTimeout(
                f"timed out: {type(exc).__name__}", method=method, url=safe_url
            )
        except requests.exceptions.SSLError:
            error = HttpConnectionError("TLS failure", method=method, url=safe_url)
            error.retryable = False  # a bad certificate will not fix itself on retry
        except requests.exceptions.ConnectionError as exc:
            error = HttpConnectionError(
                f"connection failed: {_root_cause(exc)}", method=method, url=safe_url
            )
        except (requests.exceptions.RequestException, Urllib3Error, ValueError) as exc:
            error = HttpError(f"request failed: {type(exc).__name__}", method=method, url=safe_url)
        raise self._log_error(error, started)

    def _pinned_for(self, prepared: requests.PreparedRequest) -> HTTPAdapter:
        method, url = str(prepared.method), str(prepared.url)
        safe_url = redact_url(url)
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"}:
            raise self._log_error(
                HttpBlockedDestination(
                    f"scheme {parts.scheme!r} is not allowed", method=method, url=safe_url
                ),
                None,
            )
        try:
            host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            host = None
        if not host:
            raise self._log_error(
                HttpBlockedDestination("no valid host", method=method, url=safe_url), None
            )
        try:
            addresses = guard.resolve(host, port)
        except (OSError, UnicodeError):
            raise self._log_error(
                HttpConnectionError("name resolution failed", method=method, url=safe_url), None
            ) from None
        for address in addresses:
            reason = self.blocked_reason(ipaddress.ip_address(address))
            if reason:
                raise self._log_error(
                    HttpBlockedDestination(
                        f"{host} resolves to {address}: {reason}", method=method, url=safe_url
                    ),
                    None,
                )
        return guard.pinned_adapter(tuple(addresses))

    def _finish(
        self,
        prepared: requests.PreparedRequest,
        raw: requests.Response,
        started: float,
        *,
        cap: int,
        raise_for_status: bool,
    ) -> HttpResponse:
        method, safe_url = str(prepared.method), redact_url(str(prepared.url))
        try:
            content = self._read_capped(raw, cap, method=method, safe_url=safe_url)
        except HttpError as error:
            raise self._log_error(error, started) from None
        status = raw.status_code
        elapsed_ms = self._log_done(prepared, status, started)
        if raise_for_status and status >= 400:
            raise status_error(
                method=method,
                safe_url=safe_url,
                status=status,
                headers=raw.headers,
                content=content,
            )
        return HttpResponse(
            status=status, headers=raw.headers, content=content, url=safe_url, elapsed_ms=elapsed_ms
        )

    @staticmethod
    def _log_done(prepared: requests.PreparedRequest, status: int, started: float) -> float:
        method, safe_url = str(prepared.method), redact_url(str(prepared.url))
        elapsed_ms = (time.monotonic() - started) * 1000
        log = logger.warning if status >= 400 else logger.info
        log(
            "http.request %s %s -> %s in %.0f ms",
            method,
            safe_url,
            status,
            elapsed_ms,
            extra={
                "http_method": method,
                "http_url": safe_url,
                "http_status": status,
                "duration_ms": round(elapsed_ms, 1),
            },
        )
        return elapsed_ms

    @staticmethod
    def _read_capped(raw: requests.Response, cap: int, *, method: str, safe_url: str) -> bytes:
        declared = raw.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise HttpResponseTooLarge(
                f"declared body of {declared} bytes exceeds the cap of {cap}",
                method=method,
                url=safe_url,
                status=raw.status_code,
            )
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in _iter_raw(raw):
                size += len(chunk)
                if size > cap:
                    raise HttpResponseTooLarge(
                        f"body exceeds the cap of {cap} bytes",
                        method=method,
                        url=safe_url,
                        status=raw.status_code,
                    )
                chunks.append(chunk)
        except Urllib3ReadTimeout:
            raise HttpTimeout("timed out reading the body", method=method, url=safe_url) from None
        except (ProtocolError, requests.exceptions.ConnectionError, OSError) as exc:
            raise HttpConnectionError(
                f"connection broken while reading: {type(exc).__name__}",
                method=method,
                url=safe_url,
            ) from None
        return b"".join(chunks)

    @staticmethod
    def _log_error(error: HttpError, started: float | None) -> HttpError:
        elapsed_ms = (time.monotonic() - started) * 1000 if started is not None else 0.0
        logger.warning(
            "http.error %s %s -> %s in %.0f ms",
            error.method,
            error.url,
            type(error).__name__,
            elapsed_ms,
            extra={
                "http_method": error.method,
                "http_url": error.url,
                "http_error": type(error).__name__,
                "duration_ms": round(elapsed_ms, 1),
            },
        )
        return error


def _iter_raw(raw: requests.Response) -> Iterator[bytes]:
    # Decoded bytes are counted, so a compressed bomb hits the cap too.
    yield from raw.raw.stream(64 * 1024, decode_content=True)


def _root_cause(exc: BaseException) -> str:
    seen = exc
    while seen.__context__ is not None or seen.__cause__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]  # the loop condition: one is set
    return type(seen).__name__


class _KeptAdapter(HTTPAdapter):
    """Kept connections probed by TCP keepalive while idle: a NAT or load balancer that drops
    idle flows silently (some after 4 minutes) keeps them, and a dead peer is found before a
    request waits out its read timeout on it (a send that times out is not retried)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        options = [
            *HTTPConnection.default_socket_options,
            (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        ]
        for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, name):  # Linux; other systems keep their defaults
                options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
        kwargs["socket_options"] = options
        super().init_poolmanager(*args, **kwargs)


def _pool(cls: type) -> HTTPAdapter:
    """The process's connection pool for a `keep_alive` client class (urllib3's pools are
    thread-safe; a forked child makes its own: sockets are not shared across processes). As
    many kept connections per host as the real-time worker has threads."""
    key = (os.getpid(), cls)
    pool = _POOLS.get(key)
    if pool is None:  # two threads may both make one: one wins, the other is dropped
        pool = _POOLS.setdefault(key, _KeptAdapter(max_retries=0, pool_maxsize=100))
    return pool

"""A small scriptable HTTP server on loopback, for faking external APIs in tests.

Real HTTP, so the real client code (google-genai, requests, our erp.http client) runs.
Routes are `(METHOD, pattern)` where the pattern is a regular expression matched against the
path (query string excluded); the handler gets a `FakeRequest` and returns a `FakeResponse`.
A response can stream `chunks` with a delay between them, or hang (`delay` before headers).

    with FakeServer() as server:
        server.route("POST", r"/v1/models/(?P<model>[^/:]+):generateContent",
                     lambda req: FakeResponse.json({"candidates": []}))
        client = make_client(base_url=server.url)
        ...
        assert server.requests[0].json()["contents"]
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class FakeRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)
    received_at: float = field(default_factory=time.monotonic)  # when its body was read
    peer: tuple[str, int] | None = None  # the client's address: one per connection

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


@dataclass
class FakeResponse:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] | None = None  # streamed instead of body when set
    chunk_delay: float = 0.0  # seconds between chunks
    delay: float = 0.0  # seconds before the status line (simulates a slow or hung server)

    @classmethod
    def json(cls, data: Any, status: int = 200, **kw: Any) -> FakeResponse:
        headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
        return cls(status=status, body=json.dumps(data).encode(), headers=headers, **kw)

    @classmethod
    def sse(
        cls, events: Iterable[Any], *, chunk_delay: float = 0.0, done: str | None = None, **kw: Any
    ) -> FakeResponse:
        """Server-sent events, `data: <json>\\n\\n` each; `done` adds a final `data: <done>`."""
        payloads = [f"data: {json.dumps(e)}\r\n\r\n".encode() for e in events]
        if done is not None:
            payloads.append(f"data: {done}\r\n\r\n".encode())
        headers = {"Content-Type": "text/event-stream", **kw.pop("headers", {})}
        return cls(status=200, chunks=payloads, chunk_delay=chunk_delay, headers=headers, **kw)


Handler = Callable[[FakeRequest], FakeResponse]


class FakeServer:
    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.requests: list[FakeRequest] = []
        self._lock = threading.Lock()
        self.in_flight = 0  # requests being answered right now
        self.max_in_flight = 0  # the most answered at once (overlap of slow fake calls)
        self._httpd: _Httpd | None = None
        self._thread: threading.Thread | None = None

    # --- configuration ------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler | FakeResponse) -> None:
        """Add (or replace, for the same method and pattern) a route."""
        if isinstance(handler, FakeResponse):
            response = handler
            handler = lambda _req: response  # noqa: E731
        compiled = re.compile(pattern)
        with self._lock:
            self.routes = [r for r in self.routes if not (r[0] == method and r[1] == compiled)]
            self.routes.append((method.upper(), compiled, handler))

    def sequence(self, *responses: FakeResponse) -> Handler:
        """A handler answering each response in turn, then repeating the last."""
        queue = list(responses)

        def handler(_req: FakeRequest) -> FakeResponse:
            with self._lock:
                return queue.pop(0) if len(queue) > 1 else queue[0]

        return handler

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"  # type: ignore[str-bytes-safe]  # TCP: host is a str

    def requests_clear(self) -> None:
        """Forget the recorded requests and the overlap seen (between tests sharing one
        server)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight

    def requests_snapshot(self) -> list[FakeRequest]:
        """The recorded requests so far, copied under the lock."""
        with self._lock:
            return list(self.requests)

    def requests_to(self, pattern: str) -> list[FakeRequest]:
        compiled = re.compile(pattern)
        return [r for r in self.requests if compiled.search(r.path)]

    def answer(self, request: FakeRequest) -> FakeResponse:
        """Record `request` and answer it from the first matching route (404 JSON if none)."""
        with self._lock:
            self.requests.append(request)
            routes = list(self.routes)
        return self._route(request, routes)

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Counts one request as being answered (its delays and streaming included)."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def _route(
        self, request: FakeRequest, routes: list[tuple[str, re.Pattern[str], Handler]]
    ) -> FakeResponse:
        for method, pattern, handler in routes:
            match = pattern.fullmatch(request.path)
            if method == request.method and match:
                request.params = match.groupdict()
                return handler(request)
        return FakeResponse.json(
            {"error": {"code": 404, "message": f"no fake route for {request.path}"}},
            status=404,
        )

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> FakeServer:
        self._httpd = _Httpd(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: with Nagle on, delayed ACKs add ~40 ms.
    disable_nagle_algorithm = True
    server: _Httpd

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        # A client may reset a kept-alive connection while it waits for the next request.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = FakeRequest(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
            peer=self.client_address[:2],
        )
        with self.server.fake.answering():
            response = self.server.fake.answer(request)
            if response.delay:
                time.sleep(response.delay)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(response)  # unless the client gave up (timeout tests)

    def _send(self, response: FakeResponse) -> None:
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        if response.chunks is None:
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i, chunk in enumerate(response.chunks):
                if i and response.chunk_delay:
                    time.sleep(response.chunk_delay)
                self.wfile.write(f"{len(chunk):X}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

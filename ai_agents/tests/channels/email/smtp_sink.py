"""A minimal SMTP server on loopback for a real worker's e-mail (its own process: Django's
locmem outbox is not shared): it accepts every message and keeps it, parsed."""

from __future__ import annotations

import email
import email.policy
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any


class _Session(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        self._say("220 sink ESMTP")
        while line := self.rfile.readline():
            verb = line.decode("ascii", "replace").strip().split(" ", 1)[0].upper()
            if verb == "DATA":
                self._say("354 go ahead")
                self.server.received(self._data())
                self._say("250 kept")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:  # EHLO, HELO, MAIL, RCPT, RSET, NOOP
                self._say("250 ok")

    def _data(self) -> bytes:
        lines = []
        while (line := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)
        return b"".join(lines)

    def _say(self, reply: str) -> None:
        self.wfile.write(reply.encode() + b"\r\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Session)
        self.messages: list[EmailMessage] = []
        self._lock = threading.Lock()

    def received(self, data: bytes) -> None:
        parsed: Any = email.message_from_bytes(data, policy=email.policy.default)
        with self._lock:
            self.messages.append(parsed)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.server_address[1]}"


@contextmanager
def smtp_sink() -> Iterator[_Server]:
    """`with smtp_sink() as sink:` the worker's EMAIL_URL is `sink.url`; `sink.messages`."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()

"""Which sites may embed a web chat: the one rule for `allowed_origins`, used by the channels API
and the admin (`origin_pattern_clean`) and by the widget's endpoints (`origin_matches`).

A pattern is an origin without a path: `https://host[:port]`, or `http://` only for
`localhost`, `127.0.0.1` and `[::1]` (development). Its host may start with `*.` standing for
exactly one label: `https://*.example.com` admits `https://shop.example.com` but neither
`https://example.com` nor `https://a.b.example.com` (list those too if they embed the chat), and
the wildcard needs two labels after it (`https://*.com` is refused). Scheme and port compare
exactly; a default port (443, 80) is the same as none. No `*` alone, nowhere else in the host,
no path, query or user.

The browser's `Origin` header is compared with the patterns; scripts cannot forge it, which is
what makes the public key safe to publish.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.utils.translation import gettext as _

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_PATTERN = re.compile(
    rf"^(?P<scheme>https?)://(?P<wild>\*\.)?(?P<host>{_LABEL}(?:\.{_LABEL})*|\[::1\])"
    r"(?::(?P<port>\d{1,5}))?$"
)
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
DEFAULT_PORTS = {"http": 80, "https": 443}


class OriginInvalid(ValueError):
    """A pattern the rule refuses; the message (Spanish first) says how to write it."""


@dataclass(frozen=True)
class OriginPattern:
    scheme: str
    host: str  # without the wildcard label
    port: int
    wildcard: bool

    def __str__(self) -> str:
        port = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{'*.' if self.wildcard else ''}{self.host}{port}"

    def admits(self, scheme: str, host: str, port: int) -> bool:
        if (scheme, port) != (self.scheme, self.port):
            return False
        if not self.wildcard:
            return host == self.host
        label, dot, rest = host.partition(".")
        return bool(label and dot) and rest == self.host


def origin_pattern_parse(text: str) -> OriginPattern:
    """The pattern in `text` (case and surrounding spaces ignored); raises OriginInvalid."""
    match = _PATTERN.match(text.strip().lower())
    if match is None:
        raise _invalid(text)
    scheme, host, wild = match["scheme"], match["host"], bool(match["wild"])
    port = int(match["port"]) if match["port"] else DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        raise _invalid(text)
    local = host in LOCAL_HOSTS
    if wild and (local or host.count(".") < 1):
        raise OriginInvalid(
            _(
                "Origen no válido: %(origin)s. El comodín * solo puede ser la primera parte "
                "de un dominio con al menos dos partes más, p. ej. https://*.tienda.es."
            )
            % {"origin": text[:200]}
        )
    if (scheme == "http" and not local) or (host.count(".") < 1 and not local):
        raise _invalid(text)
    return OriginPattern(scheme=scheme, host=host, port=port, wildcard=wild)


def origin_pattern_clean(value: object) -> str:
    """The pattern written the one way it is stored (lowercase, no default port)."""
    if not isinstance(value, str):
        raise _invalid(str(value))
    return str(origin_pattern_parse(value))


def origin_normalize(origin: str) -> str:
    """`scheme://host[:port]`, or "" for anything that is not an origin (a browser never sends
    a port over 65535 or a malformed host: such a header is refused, not a 500)."""
    parsed = _origin_parts(origin)
    if parsed is None:
        return ""
    scheme, host, port = parsed
    shown = "" if port == DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host}{shown}"


def origin_matches(origin: str, patterns: Iterable[str]) -> bool:
    """True when the browser's `Origin` is admitted by one of the patterns. A stored pattern
    the rule refuses (written before it) admits nothing."""
    parsed = _origin_parts(origin)
    if parsed is None:
        return False
    for text in patterns:
        try:
            pattern = origin_pattern_parse(str(text).rstrip("/"))
        except OriginInvalid:
            continue
        if pattern.admits(*parsed):
            return True
    return False


def _origin_parts(origin: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(origin.strip().rstrip("/").lower())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.path or parts.username is not None:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    resolved = port if port is not None else DEFAULT_PORTS.get(parts.scheme)
    if resolved is None:
        return None
    return parts.scheme, host, resolved


def _invalid(text: str) -> OriginInvalid:
    return OriginInvalid(
        _(
            "Origen no válido: %(origin)s. Use https://dominio[:puerto] sin ruta, "
            "https://*.dominio para sus subdominios (o http://localhost[:puerto] para pruebas)."
        )
        % {"origin": text[:200]}
    )

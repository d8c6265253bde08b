"""The SSRF guard of `erp.http.client`: which addresses are public, and connections pinned to
the addresses that were checked (DNS rebinding between check and connect is useless)."""

from __future__ import annotations

import ipaddress
import socket

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def address_blocked_reason(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why this address is not a public destination, or None when it is."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is None and ip.teredo:
            embedded = ip.teredo[1]
        if embedded is not None:
            reason = address_blocked_reason(embedded)
            return f"{reason} (embedded in {ip})" if reason else None
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("shared address space (CGNAT)", ip in _CGNAT),
        ("reserved", ip.is_reserved),
        ("not globally routable", not ip.is_global),
    )
    for reason, hit in checks:
        if hit:
            return reason
    return None


def resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in seen:
            seen.append(address)
    return seen


class _PinnedConnectionMixin:
    """Connects the socket to pre-checked addresses; `host` (Host, SNI, cert) is unchanged."""

    pinned_addresses: tuple[str, ...] = ()
    _dns_host: str

    def _new_conn(self) -> socket.socket:
        original = self._dns_host
        last: Exception | None = None
        for address in self.pinned_addresses:
            self._dns_host = address
            try:
                return super()._new_conn()  # type: ignore[misc]  # a mixin of urllib3 HTTPConnection
            except (NewConnectionError, ConnectTimeoutError) as exc:
                last = exc
            finally:
                self._dns_host = original
        assert last is not None
        raise last


def pinned_adapter(addresses: tuple[str, ...]) -> HTTPAdapter:
    attrs = {"pinned_addresses": addresses}
    http_conn = type("PinnedHTTPConnection", (_PinnedConnectionMixin, HTTPConnection), attrs)
    https_conn = type("PinnedHTTPSConnection", (_PinnedConnectionMixin, HTTPSConnection), attrs)
    adapter = HTTPAdapter(pool_connections=1, pool_maxsize=1, max_retries=0)
    adapter.poolmanager.pool_classes_by_scheme = {
        "http": type("PinnedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn}),
        "https": type("PinnedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn}),
    }
    return adapter

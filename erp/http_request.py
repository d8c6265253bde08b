"""Facts about the inbound request that need the deployment's shape."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The client's address. Behind `TRUSTED_PROXY_HOPS` proxies, each appending the address
    it saw to X-Forwarded-For, it is the entry that many places from the right; entries further
    left are whatever the client sent, so never trusted. Without proxies (0): REMOTE_ADDR."""
    hops = int(settings.TRUSTED_PROXY_HOPS)
    remote = str(request.META.get("REMOTE_ADDR") or "unknown")
    if hops <= 0:
        return remote
    forwarded = [
        part.strip()
        for part in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")
        if part.strip()
    ]
    if len(forwarded) < hops:
        return remote  # not through the expected proxies: the nearest address we know
    return forwarded[-hops]

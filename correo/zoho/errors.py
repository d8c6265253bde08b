"""Typed Zoho errors: callers decide on the type, never on the message.

    ZohoError
    ├── ZohoNotConnected     no refresh token: the member has not connected the mailbox
    │   └── ZohoNotConfigured  ZOHO_CLIENT_ID / ZOHO_CLIENT_SECRET unset, or rejected by Zoho
    ├── ZohoAuthError        the refresh token is revoked or invalid, or a scope is missing:
    │                        the member must reconnect (recorded in `connection.last_error`)
    ├── ZohoRateLimited      Zoho said "too many requests", or our own refresh throttle did
    ├── ZohoUnavailable      5xx, connection refused/reset, an answer we cannot read
    │   └── ZohoTimeout      no answer in time
    ├── ZohoNotFound         the message or folder does not exist (404)
    └── ZohoBadRequest       Zoho rejected a parameter (400 PATTERN_NOT_MATCHED, ...)

Messages never contain tokens or bodies.
"""

from __future__ import annotations


class ZohoError(Exception):
    """Base of every Zoho failure. `code` is Zoho's error code when it gave one."""

    retryable = False

    def __init__(self, message: str, *, code: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class ZohoNotConnected(ZohoError):
    pass


class ZohoNotConfigured(ZohoNotConnected):
    pass


class ZohoAuthError(ZohoError):
    pass


class ZohoRateLimited(ZohoError):
    retryable = True


class ZohoUnavailable(ZohoError):
    retryable = True


class ZohoTimeout(ZohoUnavailable):
    pass


class ZohoNotFound(ZohoError):
    pass


class ZohoBadRequest(ZohoError):
    pass

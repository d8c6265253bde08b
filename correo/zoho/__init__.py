"""Zoho Mail for the mailbox secretary: client, OAuth, typed errors, DTOs."""

from correo.zoho.client import ZohoMailClient, build_search_key
from correo.zoho.errors import (
    ZohoAuthError,
    ZohoBadRequest,
    ZohoError,
    ZohoNotConfigured,
    ZohoNotConnected,
    ZohoNotFound,
    ZohoRateLimited,
    ZohoTimeout,
    ZohoUnavailable,
)
from correo.zoho.schemas import MailSummary

__all__ = [
    "MailSummary",
    "ZohoAuthError",
    "ZohoBadRequest",
    "ZohoError",
    "ZohoMailClient",
    "ZohoNotConfigured",
    "ZohoNotConnected",
    "ZohoNotFound",
    "ZohoRateLimited",
    "ZohoTimeout",
    "ZohoUnavailable",
    "build_search_key",
]

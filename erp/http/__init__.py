"""Outbound HTTP: the client (`client`), its errors, redaction and SSRF guard."""

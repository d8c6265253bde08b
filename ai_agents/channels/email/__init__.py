"""Inbound e-mail as raw RFC 5322 and replies over SMTP: adapter.py (threading, loop guards,
SMTP sends), parse.py (MIME parsing, quote and signature cutting), views.py and urls.py
(/webhooks/email/<token>)."""

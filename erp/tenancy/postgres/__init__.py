"""Django's PostgreSQL backend, plus the tenant scope sent with each transaction (see base.py)."""

"""Settings for the type checker: mypy's django-stubs plugin imports them to learn the models.

`erp.settings` with no DATABASE_URL starts the embedded PostgreSQL (and writes a secret key
under var/); a type check must start nothing and touch no data directory. These placeholder
URLs are never connected to: the plugin only builds the app registry.
"""

import os

os.environ["DATABASE_URL"] = "postgres://typecheck@127.0.0.1:1/typecheck"
os.environ["REDIS_URL"] = "redis://127.0.0.1:1/0"
os.environ["SECRET_KEY"] = "typecheck"  # a placeholder: nothing is signed
os.environ["ERP_TESTING"] = "1"  # the test app's models are type-checked too

from erp.settings import *  # noqa: F403

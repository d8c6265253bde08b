"""Root conftest: the shared fixtures live in erp.testing (services start in its plugin)."""

from erp.testing.browser import asgi_server, browser, live_page  # noqa: F401
from erp.testing.celery_worker import celery_worker_process  # noqa: F401
from erp.testing.fake_google import _fake_google_server, fake_google  # noqa: F401
from erp.testing.fake_graph import _fake_graph_server, fake_graph  # noqa: F401
from erp.testing.fake_openai import _fake_openai_server, fake_openai  # noqa: F401
from erp.testing.fixtures import *  # noqa: F403
from erp.testing.fixtures import _default_language, _fresh_price_table  # noqa: F401
from erp.testing.team import fresh_invite_allowance  # noqa: F401

"""Root conftest: the shared fixtures live in erp.testing (services start in its plugin)."""

from erp.testing.fake_google import fake_google  # noqa: F401
from erp.testing.fixtures import *  # noqa: F403

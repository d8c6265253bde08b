"""Browser tests: Playwright driving Debian's Chromium (`CHROMIUM_PATH`, default /usr/bin/chromium).

Fixtures (exposed by the root conftest):
- `browser`: one headless Chromium per test module.
- `asgi_server`: the app under uvicorn in a thread of this process (ASGI as in production, so
  SSE streams; the WSGI `live_server` buffers async streams). It uses the test database.
- `live_page`: a page whose base URL is pytest-django's `live_server`.

Helpers: `BROWSER_TEST` (the `pytestmark` of a browser test module), `context_new`, `PHONE`
(its options for a phone), `admin_login`.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    # no DNS look-ups of Google hosts by Chromium itself (pitfall 8); loopback only
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
]
TIMEOUT_MS = 15_000
PASSWORD = "pass-1234"  # erp.testing.fixtures personas
# `context_new(browser, **PHONE)`: a 390x844 phone with touch and a 2x screen.
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}

# No skip without Chromium: a browser test that cannot run fails (erp/testing/skip_guard.py).
BROWSER_TEST = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: `apt-get install chromium` (.ci/run does) "
            "or set CHROMIUM_PATH",
            pytrace=False,
        )
    from playwright import sync_api

    # The sync API runs an event loop in this thread, so Django's ORM would refuse to run here
    # (browser-tests.md pitfall 6); allowed only while the browser lives.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as pw:
            chromium = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def context_new(browser: Any, **options: Any) -> Any:
    """A fresh browser context (own cookies and storage: one person), Spanish by default."""
    context = browser.new_context(**{"locale": "es-ES", **options})
    context.set_default_timeout(TIMEOUT_MS)
    return context


@pytest.fixture
def asgi_server(transactional_db: Any, settings: Any) -> Iterator[str]:
    """The app under uvicorn in a thread of this process; yields its base URL."""
    import uvicorn
    from django.core.asgi import get_asgi_application

    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # Streams still open at the end (an EventSource mid-reconnect) are cut after 3 s instead of
    # outliving the test in a daemon thread.
    config = uvicorn.Config(
        get_asgi_application(),
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def live_page(browser: Any, live_server: Any) -> Iterator[Any]:
    context = context_new(browser, base_url=live_server.url)
    yield context.new_page()
    context.close()


def admin_login(page: Any, persona: Any, next_path: str, *, base: str = "") -> None:
    """Log `persona` in through the admin login form and land on `next_path`."""
    from urllib.parse import quote

    page.goto(f"{base}/admin/login/?next={quote(next_path, safe='/')}")
    page.fill("#id_username", persona.user.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path.split('?')[0]}**")

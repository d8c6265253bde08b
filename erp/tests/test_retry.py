"""erp.retry: the waits, the attempt count, the deadline and what is retried."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from erp.http.client import HttpClient
from erp.http.errors import (
    HttpClientError,
    HttpRateLimited,
    HttpServerError,
    is_retryable,
    retry_after_of,
)
from erp.retry import Attempts, Backoff, call_with_retries
from erp.testing.fake_http import FakeResponse, FakeServer


class Flaky(Exception):
    retryable = True


class Broken(Exception):
    retryable = False


def test_backoff_waits_grow_by_the_factor_up_to_the_cap() -> None:
    backoff = Backoff(attempts=6, base_delay_s=1.0, factor=2.0, max_delay_s=10.0)
    assert [backoff.wait_s(n) for n in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_a_servers_wait_replaces_the_backoff_and_has_its_own_cap() -> None:
    assert Backoff(max_delay_s=10.0).wait_s(0, retry_after=45.0) == 45.0
    capped = Backoff(max_delay_s=10.0, max_retry_after_s=10.0)
    assert capped.wait_s(0, retry_after=45.0) == 10.0
    assert capped.wait_s(3, retry_after=0.0) == 0.0


def test_call_is_retried_until_the_attempts_run_out() -> None:
    calls: list[int] = []
    waits: list[float] = []

    def call() -> None:
        calls.append(1)
        raise Flaky()

    with pytest.raises(Flaky):
        call_with_retries(
            call,
            backoff=Backoff(attempts=3, base_delay_s=1.0),
            retryable=lambda e: getattr(e, "retryable", False),
            sleep=waits.append,
        )
    assert len(calls) == 3
    assert waits == [1.0, 2.0]


def test_a_permanent_error_is_raised_at_once_and_a_success_returns() -> None:
    outcomes: list[Exception | str] = [Flaky(), "ok"]
    retries: list[tuple[int, float]] = []

    def call() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    rule: dict[str, Any] = {"retryable": lambda e: getattr(e, "retryable", False), "sleep": no_wait}
    result = call_with_retries(
        call, backoff=Backoff(), on_retry=lambda n, e, w: retries.append((n, w)), **rule
    )
    assert result == "ok" and retries == [(1, 1.0)]
    with pytest.raises(Broken):
        call_with_retries(lambda: (_ for _ in ()).throw(Broken()), backoff=Backoff(), **rule)


def test_the_deadline_stops_a_retry_whose_wait_would_not_leave_time_for_the_attempt() -> None:
    now = [0.0]
    loop = Attempts(Backoff(attempts=5, base_delay_s=4.0), deadline_s=10.0, clock=lambda: now[0])
    loop.begin()
    assert loop.retry_wait(retryable=True, reserve_s=1.0) == 4.0
    now[0] = 5.0
    loop.begin()
    assert loop.remaining_s() == 5.0
    assert loop.retry_wait(retryable=True, reserve_s=1.0) is None  # 8 s wait, 5 s left
    assert loop.retry_wait(retryable=False) is None


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


# --- with the HTTP client's rules (erp.http.errors) ----------------------------------------------
FAST = Backoff(attempts=3, base_delay_s=0.01)
HTTP_RULES: dict[str, Any] = {"retryable": is_retryable, "retry_after": retry_after_of}


def no_wait(seconds: float) -> None:
    pass


def test_retry_helper_tries_three_times_on_503_then_raises(server: FakeServer):
    server.route("GET", r"/down", FakeResponse.json({}, status=503))
    client = HttpClient(base_url=server.url)
    waits: list[float] = []

    with pytest.raises(HttpServerError):
        call_with_retries(
            lambda: client.get("/down"), backoff=FAST, **HTTP_RULES, sleep=waits.append
        )

    assert len(server.requests_to(r"/down")) == 3
    assert waits == [0.01, 0.02]


def test_retry_helper_does_not_retry_a_400(server: FakeServer):
    server.route("GET", r"/bad", FakeResponse.json({}, status=400))
    client = HttpClient(base_url=server.url)

    with pytest.raises(HttpClientError):
        call_with_retries(lambda: client.get("/bad"), backoff=FAST, **HTTP_RULES, sleep=no_wait)

    assert len(server.requests_to(r"/bad")) == 1


def test_retry_helper_honours_retry_after_and_recovers(server: FakeServer):
    busy = FakeResponse.json({}, status=429, headers={"Retry-After": "2"})
    server.route("GET", r"/flaky", server.sequence(busy, FakeResponse.json({"n": 2})))
    client = HttpClient(base_url=server.url)
    waits: list[float] = []

    result = call_with_retries(
        lambda: client.get("/flaky"), backoff=Backoff(), **HTTP_RULES, sleep=waits.append
    )

    assert result.json() == {"n": 2}
    assert waits == [2.0]


def test_retry_helper_gives_up_at_once_when_retry_after_exceeds_the_cap(server: FakeServer):
    server.route(
        "GET", r"/later", FakeResponse.json({}, status=429, headers={"Retry-After": "3600"})
    )
    client = HttpClient(base_url=server.url)

    with pytest.raises(HttpRateLimited) as info:
        call_with_retries(
            lambda: client.get("/later"), backoff=Backoff(), **HTTP_RULES, sleep=no_wait
        )

    assert info.value.retry_after == 3600
    assert len(server.requests_to(r"/later")) == 1

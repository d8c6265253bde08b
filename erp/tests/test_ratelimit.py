import threading
import time
import uuid

import pytest
from django.core.cache import cache

from erp.ratelimit import add, hit, notice_once
from erp.testing import deadlines


def fresh() -> str:
    return uuid.uuid4().hex


def test_limit_and_retry_after() -> None:
    key = fresh()
    results = [hit(key, limit=3, window_s=60) for _ in range(4)]
    assert [r.allowed for r in results] == [True, True, True, False]
    assert [r.count for r in results] == [1, 2, 3, 3]
    assert results[-1].retry_after_s in range(55, 61)
    assert results[0].retry_after_s == 0


def test_window_expires() -> None:
    key = fresh()
    # A window of 3 s: the second hit comes well inside it even on a loaded machine.
    assert hit(key, limit=1, window_s=3).allowed
    refused = hit(key, limit=1, window_s=3)
    assert not refused.allowed
    assert 1 <= refused.retry_after_s <= 3
    time.sleep(3.2)
    assert hit(key, limit=1, window_s=3).allowed


def test_concurrent_hits_are_atomic() -> None:
    key = fresh()
    barrier = deadlines.barrier(50)
    allowed: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        result = hit(key, limit=20, window_s=60)
        with lock:
            allowed.append(result.allowed)

    threads = [threading.Thread(target=worker) for _ in range(50)]
    for t in threads:
        t.start()
    deadlines.threads_join(threads)
    assert len(allowed) == 50
    assert sum(allowed) == 20


def test_the_window_slides_each_hit_leaves_it_on_its_own() -> None:
    key = fresh()
    # Hits at 0 s and 1 s in a 3 s window with room for 2: at 3.2 s the first has left (one
    # more fits), the second has not (a second more does not); a fixed window would let both.
    assert hit(key, limit=2, window_s=3).allowed
    time.sleep(1)
    assert hit(key, limit=2, window_s=3).allowed
    refused = hit(key, limit=2, window_s=3)
    assert not refused.allowed
    assert 1 <= refused.retry_after_s <= 2  # the first hit leaves 2 s from now, not 3
    time.sleep(2.2)
    assert hit(key, limit=2, window_s=3).allowed
    assert not hit(key, limit=2, window_s=3).allowed


def test_keys_are_independent() -> None:
    key = fresh()
    results = [hit(key, limit=20, window_s=60) for _ in range(21)]
    assert all(r.allowed for r in results[:20])
    assert not results[20].allowed and results[20].retry_after_s >= 1
    assert hit(fresh(), limit=20, window_s=60).allowed


def test_amounts_count_and_refusals_add_nothing() -> None:
    key = fresh()
    assert hit(key, limit=50_000, window_s=60, amount=30_000).allowed
    refused = hit(key, limit=50_000, window_s=60, amount=30_000)
    assert not refused.allowed and refused.count == 30_000
    assert hit(key, limit=50_000, window_s=60, amount=20_000).allowed
    assert not hit(key, limit=50_000, window_s=60, amount=1).allowed
    assert add(key, amount=500, window_s=60) == 50_500
    assert add(key, amount=-1_000, window_s=60) == 49_500  # a correction of an estimate
    assert hit(key, limit=50_000, window_s=60, amount=500).allowed


def test_a_hit_larger_than_the_limit_waits_the_whole_window() -> None:
    refused = hit(fresh(), limit=10, window_s=60, amount=11)
    assert not refused.allowed and refused.retry_after_s == 60


def test_add_unconditional() -> None:
    key = fresh()
    assert add(key, amount=5, window_s=60) == 5
    assert add(key, amount=5, window_s=60) == 10
    assert not hit(key, limit=10, window_s=60).allowed


def test_counter_lives_in_the_real_redis_cache() -> None:
    key = fresh()
    hit(key, limit=5, window_s=60, amount=2)
    hit(key, limit=5, window_s=60)
    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]  # Django's private Redis client
    full = cache.make_and_validate_key(f"rl:{key}")
    assert client.zcard(full) == 2  # one entry per counted hit, scored by its time
    assert 0 < client.pttl(full) <= 60_000


def test_notice_once_per_window() -> None:
    key = fresh()
    assert notice_once(key, 60) is True
    assert notice_once(key, 60) is False
    assert notice_once(fresh(), 60) is True


def test_notice_once_concurrently_only_one_winner() -> None:
    key = fresh()
    barrier = deadlines.barrier(20)
    wins: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        won = notice_once(key, 60)
        with lock:
            wins.append(won)

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for t in threads:
        t.start()
    deadlines.threads_join(threads)
    assert sum(wins) == 1


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        hit(fresh(), limit=1, window_s=0)
    with pytest.raises(ValueError):
        hit(fresh(), limit=1, window_s=1, amount=-1)

"""When PostgreSQL goes away (a restart, a crash, a failover) requests get a fast 503, not a
wait on the connection pool and a 500, and the web uses the database again as soon as it is
back.

How: a database error seen by a request (`outage_suspected`) puts the process in outage mode.
In outage mode each request first asks `database_up()`: one direct connection attempt
(bounded by DB_CONNECT_TIMEOUT_SECONDS), shared by all threads for PROBE_EVERY seconds. Down:
the request is answered 503 at once and the pool is left alone, so it does not pile up
reconnection attempts with growing delays; requests already waiting in the pool for a
connection are let go with an error (a 503) instead of waiting DB_POOL_TIMEOUT_SECONDS. Up:
the pool throws away its connections to the dead server (`check()`) and the process leaves
outage mode.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

PROBE_EVERY = 0.2
_lock = threading.Lock()
_state = {"suspect": False, "up": True, "probed_at": 0.0}


# SQLSTATEs of a server going away: admin_shutdown, crash_shutdown, cannot_connect_now.
_SHUTDOWN_STATES = {"57P01", "57P02", "57P03"}


def is_outage_error(exc: BaseException | None) -> bool:
    """A database that cannot be reached. Not a statement timeout, a deadlock or a bad query:
    the server answered those (a 500, or the caller's own handling)."""
    import psycopg

    if isinstance(exc, OperationalError | InterfaceError):
        if exc.__cause__ is None:
            return True  # Django's own (e.g. "connection already closed")
        exc = exc.__cause__
    # psycopg's errors, also when they escape Django's wrapper (the pool's PoolTimeout).
    if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    sqlstate = getattr(exc, "sqlstate", None)
    # No SQLSTATE: the client gave up (refused, reset, timed out), no server said anything.
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in _SHUTDOWN_STATES


def is_redis_outage_error(exc: BaseException | None) -> bool:
    """The Redis-compatible server (broker, cache, rate limits) cannot be reached."""
    import redis

    return isinstance(exc, redis.ConnectionError | redis.TimeoutError)


def outage_suspected() -> None:
    """A request saw the database go away: outage mode, and (confirmed by one connection
    attempt) the requests already waiting for a pooled connection are let go at once."""
    if not _state["suspect"]:
        logger.warning("database.outage_suspected")
    _state["suspect"] = True
    _state["probed_at"] = 0.0
    database_up()


def _waiters_fail(pool: Any = None) -> None:
    """Requests that passed the outage check just before the database went away wait in the
    pool for a connection it cannot open (its reconnection attempts fail) until
    DB_POOL_TIMEOUT_SECONDS (5 s). With the server confirmed down they get the pool's timeout
    error now (a 503 at once). psycopg_pool has no public call for this: its waiting queue
    and `WaitingClient.fail` are what its own `close()` uses; without them nothing happens."""
    from psycopg_pool import PoolTimeout

    pool = pool if pool is not None else getattr(connection, "pool", None)
    waiting, lock = getattr(pool, "_waiting", None), getattr(pool, "_lock", None)
    if waiting is None or lock is None:
        return
    with lock:
        clients = list(waiting)
        waiting.clear()
    for client in clients:
        client.fail(PoolTimeout("the database server cannot be reached"))


def database_up() -> bool:
    """True unless an outage is suspected and the database still refuses connections."""
    if not _state["suspect"]:
        return True
    with _lock:
        if not _state["suspect"]:
            return True
        if time.monotonic() - _state["probed_at"] < PROBE_EVERY:
            return bool(_state["up"])
        up = _probe()
        _state.update(up=up, probed_at=time.monotonic())
        if up:
            _recovered()
        else:
            _waiters_fail()
        return up


def _probe() -> bool:
    import psycopg

    params = connection.get_connection_params()
    try:
        psycopg.connect(**params, autocommit=True).close()
    except (psycopg.Error, OSError):
        return False
    return True


def _recovered() -> None:
    pool = getattr(connection, "pool", None)
    if pool is not None:
        try:
            pool.check()  # drop idle connections to the old server, open fresh ones
        except Exception:  # gone again: stay in outage mode
            logger.warning("database.pool_check_failed", exc_info=True)
            return
    _state["suspect"] = False
    logger.warning("database.outage_over")

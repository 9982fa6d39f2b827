"""Server-side counts for `bench/gate.py`: SQL statements and Redis round trips per request.

Loaded only by the bench's settings (`bench/gate_settings.py`). Counting happens on the drivers,
below Django, so nothing hides: psycopg's `Cursor.execute` sees every statement (the ORM's, raw
cursors, connection setup, health checks), and redis-py's `send_packed_command` is called once
per round trip (a pipeline sends all its commands in one). A request runs on one thread, start
to end (sync or gthread workers), so the counters are the thread's own: a process-wide counter
would mix the requests a gthread worker serves at once. The counts travel back in two response
headers, which the load generator reads.
"""

from __future__ import annotations

import threading

import psycopg
from redis.connection import AbstractConnection

SQL_HEADER = "X-Bench-SQL-Statements"
REDIS_HEADER = "X-Bench-Redis-Round-Trips"

_counts = threading.local()


def _counting(method, key: str):
    def wrapper(*args, **kwargs):
        setattr(_counts, key, getattr(_counts, key, 0) + 1)
        return method(*args, **kwargs)

    wrapper.__wrapped__ = method
    return wrapper


def install() -> None:
    if not hasattr(psycopg.Cursor.execute, "__wrapped__"):
        psycopg.Cursor.execute = _counting(psycopg.Cursor.execute, "sql")
        psycopg.Cursor.executemany = _counting(psycopg.Cursor.executemany, "sql")
    if not hasattr(AbstractConnection.send_packed_command, "__wrapped__"):
        AbstractConnection.send_packed_command = _counting(
            AbstractConnection.send_packed_command, "redis"
        )


class CountingMiddleware:
    """Outermost: what every other middleware and the view cost is inside the count."""

    def __init__(self, get_response):
        install()
        self.get_response = get_response

    def __call__(self, request):
        _counts.sql = _counts.redis = 0
        response = self.get_response(request)
        response[SQL_HEADER] = str(_counts.sql)
        response[REDIS_HEADER] = str(_counts.redis)
        return response

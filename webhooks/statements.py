"""The SQL this app writes by hand: on its own tables only (issue 27), each statement pinned by a
test to the ORM path it replaces (tests/webhooks/test_statements.py).

- `event_insert_sql`: a clause that records an event from a change's own SQL statement, the
  row `services.webhook_event_record` saves but for its data, which the dispatch renders later
  from the changed rows (`source`). The gate's admission is one autocommit statement; the ORM
  path would add a transaction and three round trips to it.
- `organizer_slots`: the attempts in flight per organizer across every worker, as PostgreSQL
  advisory locks (a lock table would need its own clean-up after a killed worker; a session's
  advisory locks go with its connection). On SQLite, which serves one machine, a count in the
  process.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import connection

from ticketing.db import insert_params, insert_sql

from .models import WebhookEvent


def event_insert_sql(*, name: str, source: str, rows: str) -> str:
    """A clause of a WITH (`{name} AS (INSERT ...)`) that records an event for each row of
    `source` (a FROM clause: the change's statement yields one row, or none when it changed
    nothing), with `rows` (an SQL expression over `source`, JSON) as its `source`. Values:
    `event_insert_params` with the same `name`."""
    return insert_sql(WebhookEvent, name=name, source=source, values={"source": rows})


def event_insert_params(
    *, name: str, event: WebhookEvent, at: datetime, renderer: str
) -> dict[str, Any]:
    """The values of `event_insert_sql` for `event` (unsaved, its data None), each as the ORM
    prepares its field's value for saving (`ticketing.db.insert_params`)."""
    event.created_at, event.renderer = at, renderer
    params = insert_params(event, name=name)
    del params[f"{name}_source"]  # the statement's own rows
    return params


# --- Attempts in flight per organizer -------------------------------------------------------

# The first half of each advisory lock's 64-bit key: this app's ("wh"), so no other lock of
# the database's can collide; then the organizer's id and the slot's number.
_LOCK_SPACE = 0x7768
_local_lock = threading.Lock()
_local_taken: Counter[int] = Counter()


def _slot_key(organizer_id: int, slot: int) -> int:
    return (_LOCK_SPACE << 40) | (organizer_id << 8) | slot


@contextmanager
def organizer_slots(
    *, organizer_id: int, want: int, cap: int, wait_seconds: float = 0
) -> Iterator[int]:
    """Take up to `want` of the organizer's `cap` slots for attempts in flight, for the time of
    the block, waiting up to `wait_seconds` for one to be free; yields how many were taken (0:
    come back later). Held by this thread's database connection: a worker that dies frees them
    with its connection."""
    want, cap = min(want, cap, 255), min(cap, 255)
    deadline = time.monotonic() + wait_seconds
    while not (taken := _slots_take(organizer_id, want, cap)) and time.monotonic() < deadline:
        time.sleep(_SLOT_POLL_SECONDS)
    try:
        yield len(taken)
    finally:
        _slots_give_back(organizer_id, taken)


_SLOT_POLL_SECONDS = 0.05


def _slots_take(organizer_id: int, want: int, cap: int) -> list[int]:
    if connection.vendor != "postgresql":
        with _local_lock:
            free = max(0, min(want, cap - _local_taken[organizer_id]))
            _local_taken[organizer_id] += free
        return [0] * free
    keys = []
    with connection.cursor() as cursor:
        for slot in range(cap):
            if len(keys) == want:
                break
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [_slot_key(organizer_id, slot)])
            if cursor.fetchone()[0]:
                keys.append(_slot_key(organizer_id, slot))
    return keys


def _slots_give_back(organizer_id: int, keys: list[int]) -> None:
    if connection.vendor != "postgresql":
        with _local_lock:
            _local_taken[organizer_id] -= len(keys)
        return
    with connection.cursor() as cursor:
        for key in keys:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])

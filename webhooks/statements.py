"""The SQL this app writes by hand: on its own tables only (issue 27). What runs here has no ORM
form (`ticketing.twins.without_orm_twin`); the event's clause runs inside other apps'
statements, which are registered there, and is pinned to the row the ORM saves by
tests/webhooks/test_statements.py.

- `event_insert_sql`: a clause that records an event from a change's own SQL statement, the
  row `services.webhook_event_record` saves but for its data, which the dispatch renders later
  from the changed rows (`source`), when an active endpoint of the organizer is subscribed to
  its type as the statement reads them. The gate's admission is one autocommit statement; the
  ORM path would add a transaction and three round trips to it.
- `organizer_slots`: an organizer's share of the senders across every worker (`delivering`'s
  lanes), as PostgreSQL advisory locks (a lock table would need its own clean-up after a killed
  worker; a session's advisory locks go with its connection), taken in one statement, and a
  line of those waiting for one. On SQLite, which serves one machine, a count in the process.
- `organizer_lanes_quiet_seconds`: how long the holders of an organizer's slots have all been
  waiting on their receivers (PostgreSQL's `pg_locks` and `pg_stat_activity`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError, connection, transaction

from ticketing.db import insert_sql
from ticketing.twins import without_orm_twin

from .envelopes import EVENT_TYPES
from .models import WebhookEndpoint, WebhookEvent


def event_insert_sql(*, name: str, type: str, source: str, rows: str) -> str:
    """A clause of a WITH (`{name} AS (INSERT ...)`) that records an event of `type` for each
    row of `source` (a FROM clause: the change's statement yields one row, or none when it
    changed nothing), with `rows` (an SQL expression over `source`, JSON) as its `source`. The
    change is the statement's: its organizer, event and time are the statement's values
    `%(organizer_id)s`, `%(event_id)s` and `%(now)s`, and `%(now_text)s` is that time as the API
    prints times (`ticketing.api.fields.datetime_representation`).

    Only when an active endpoint of the organizer is subscribed to `type`, read by the statement
    itself (`selectors.webhook_wants` of the ORM path): a change committed after an endpoint
    subscribed always has its event, whichever process makes it.

    The event's id (`models.new_event_id`'s form) and its body (`envelopes.event_envelope`, its
    data left to the renderer of its type, which reads `source`) are made by the statement: the
    gate records an event with every admission, and building the row in Python cost a scan 155
    of its 2,683 Python calls."""
    assert type in EVENT_TYPES, type
    endpoint = WebhookEndpoint._meta.db_table
    subscribed = (
        f"EXISTS (SELECT 1 FROM {endpoint} WHERE organizer_id = %(organizer_id)s"
        f" AND is_active AND event_types ?| '{{*,{type}}}')"
    )
    # Each row's id in a subquery (a volatile select list runs once a row), so that the id
    # column and the body's id are one value.
    new = f"{name}_new"
    body = (
        f"jsonb_build_object('id', {new}.id, 'type', '{type}', 'created_at', %(now_text)s::text,"
        " 'organizer_id', %(organizer_id)s, 'event_id', %(event_id)s, 'data', NULL)"
    )
    values = {
        "id": f"{new}.id",
        "organizer_id": "%(organizer_id)s",
        "type": f"'{type}'",
        "payload": body,
        "created_at": "%(now)s",
        "dispatched_at": None,  # NULL: in the outbox
        "source": f"{new}.source",
    }
    rows = (
        f"(SELECT 'evt_' || replace(gen_random_uuid()::text, '-', '') AS id, {rows} AS source"
        f" FROM {source} WHERE {subscribed}) AS {new}"
    )
    return insert_sql(WebhookEvent, name=name, source=rows, values=values)


# --- An organizer's share of the senders -----------------------------------------------------

# The first half of each advisory lock's 64-bit key: this app's ("wh"), so no other lock of
# the database's can collide; then the organizer's id and the lock's number: a slot (0 to 99),
# a place in the line of those waiting for one (100 to 199), or the line's turnstile (255).
_LOCK_SPACE = 0x7768
_MOST_SLOTS = 100
_IN_LINE = 100
_TURNSTILE = 255
_local_lock = threading.Lock()
_local_taken: Counter[int] = Counter()


def _slot_key(organizer_id: int, slot: int) -> int:
    return (_LOCK_SPACE << 40) | (organizer_id << 8) | slot


@contextmanager
def organizer_slots(
    *, organizer_id: int, want: int, cap: int, wait_seconds: float = 0
) -> Iterator[int]:
    """Take up to `want` of the organizer's `cap` slots, for the time of the block; yields how
    many were taken (0: come back later). Held by this thread's database connection: a worker
    that dies frees them with its connection.

    With `wait_seconds`, a caller that finds none free waits up to that long for one, in line:
    at most `cap` callers wait for an organizer's slots at once (any more get 0 at once, and
    hold no thread), and they are served in the order they came (they queue on a turnstile
    lock, whose holder alone polls the slots), so work that waited is not overtaken by newer
    work of its organizer."""
    want, cap = min(want, cap, _MOST_SLOTS), min(cap, _MOST_SLOTS)
    taken = _slots_take(organizer_id, [_slot_key(organizer_id, n) for n in range(cap)], want)
    if not taken and wait_seconds > 0:
        taken = _slots_wait(organizer_id, want, cap, wait_seconds)
    try:
        yield len(taken)
    finally:
        _slots_give_back(organizer_id, taken)


_SLOT_POLL_SECONDS = 0.02


def _slots_wait(organizer_id: int, want: int, cap: int, wait_seconds: float) -> list[int]:
    """The slots taken after waiting in line for them (`organizer_slots`); none if the line is
    full or the time is up."""
    deadline = time.monotonic() + wait_seconds
    slots = [_slot_key(organizer_id, n) for n in range(cap)]
    if connection.vendor != "postgresql":  # one process: its threads poll
        while not (taken := _slots_take(organizer_id, slots, want)):
            if time.monotonic() >= deadline:
                break
            time.sleep(_SLOT_POLL_SECONDS)
        return taken
    line = [_slot_key(organizer_id, _IN_LINE + n) for n in range(cap)]
    place = _slots_take(organizer_id, line, 1)
    if not place:
        return []
    turnstile = _slot_key(organizer_id, _TURNSTILE)
    try:
        if not _lock_within(turnstile, seconds=wait_seconds):
            return []
        try:
            while not (taken := _slots_take(organizer_id, slots, want)):
                if time.monotonic() >= deadline:
                    break
                time.sleep(_SLOT_POLL_SECONDS)
            return taken
        finally:
            _slots_give_back(organizer_id, [turnstile])
    finally:
        _slots_give_back(organizer_id, place)


_ADVISORY = (
    "PostgreSQL's session advisory locks have no ORM form; on SQLite a count in the process"
    " stands for them (tests/webhooks/test_statements.py holds both to one meaning)"
)


@without_orm_twin(_ADVISORY)
def _slots_take(organizer_id: int, keys: list[int], want: int) -> list[int]:
    """Up to `want` of `keys` locked, in their order, in one statement: the scan stops at the
    `want`th lock taken."""
    if connection.vendor != "postgresql":
        with _local_lock:
            free = max(0, min(want, len(keys) - _local_taken[organizer_id]))
            _local_taken[organizer_id] += free
        return keys[:free]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT key FROM unnest(%s::bigint[]) AS key WHERE pg_try_advisory_lock(key) LIMIT %s",
            [keys, want],
        )
        return [row[0] for row in cursor.fetchall()]


@without_orm_twin(_ADVISORY)
def _lock_within(key: int, *, seconds: float) -> bool:
    """Whether the lock `key` was taken within `seconds`: waiting for it in PostgreSQL's queue
    of its waiters, first come first served."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            timeout = f"{max(1, round(seconds * 1000))}ms"
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [timeout])
            cursor.execute("SELECT pg_advisory_lock(%s)", [key])
            cursor.execute("SET LOCAL lock_timeout TO DEFAULT")  # if in a caller's transaction
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
            return False
        raise
    return True


_LOCK_NOT_AVAILABLE = "55P03"


@without_orm_twin(
    "PostgreSQL's lock and activity views have no ORM form; on SQLite, one process, no other"
    " worker's lanes to see"
)
def organizer_lanes_quiet_seconds(*, organizer_id: int, cap: int) -> float:
    """How long every holder of the organizer's slots has been waiting on something else than
    the database (its POSTs: the holder's session idle since), as the sessions' activity says;
    0 when a slot is free, a holder is at work in the database, or its activity is not visible
    (another role without `pg_read_all_stats`). Every holder quiet for seconds: its receivers
    are not answering, whether or not an attempt has timed out yet."""
    if connection.vendor != "postgresql":
        return 0.0
    keys = [_slot_key(organizer_id, n) for n in range(min(cap, _MOST_SLOTS))]
    with connection.cursor() as cursor:
        # In a transaction, the activity view is read once and kept: read it anew.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            """SELECT count(*),
                      min(extract(epoch FROM clock_timestamp() - a.state_change)),
                      bool_and(a.state LIKE 'idle%%')
               FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
               WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                 AND (l.classid::bigint << 32 | l.objid::bigint) = ANY(%s::bigint[])""",
            [keys],
        )
        held, quiet, all_quiet = cursor.fetchone()
    if held < len(keys) or not all_quiet or quiet is None:
        return 0.0
    return float(quiet)


@without_orm_twin(_ADVISORY)
def _slots_give_back(organizer_id: int, keys: list[int]) -> None:
    if not keys:
        return
    if connection.vendor != "postgresql":
        with _local_lock:
            _local_taken[organizer_id] -= len(keys)
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(key) FROM unnest(%s::bigint[]) AS key", [keys])

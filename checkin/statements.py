"""The SQL this app writes by hand, on its own tables, each statement beside the ORM path it
replaces and pinned to it by the twin test (`ticketing.twins`, tests/statements). The gate's
one-statement admission, which records the check-in and its webhook event as a service does,
is `checkin.services.statements`.

- `scan_claim`: an online scan's claim of its scan id in the event (CONTRACT §7, retry-safe
  scans). One INSERT checks that the event is the organizer's and takes the id, or finds it
  taken (`ON CONFLICT DO NOTHING`: a claim not yet committed makes it wait for that commit).
  The ORM path (`scan_claim_orm`) reads the event first, then inserts in a savepoint whose
  unique violation it catches: three round trips more.
- `tickets_save`: a batch upload chunk's changed tickets in one UPDATE (`checkin.services.batch`).
- `horizon`, `tickets_changed`: the sync feed's horizon and page (`checkin.selectors_scanner`).
- `check_in_counts`: the live check-in figures in one statement (`checkin.stats`, CONTRACT §12):
  a UNION ALL of three aggregates, so the figures are of one snapshot and agree with each other.
  Each aggregate reads one index: tickets by (event, ticket type, status), the per-type
  check-ins by check-in type, the audit rows of successful check-ins by (event, time).
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, connection, connections, router, transaction
from django.db.models import BooleanField, Count, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from events.models import CheckInType, Event
from ticketing.db import insert_fields, insert_params
from ticketing.twins import fetch_dicts, replaces, without_orm_twin
from tickets.models import Ticket

from .models import CheckInLog, ScanRecord, TicketCheckIn


@functools.cache
def scan_claim_sql() -> str:
    """INSERT a `ScanRecord` for the event named by `%(event_id)s` when it is the organizer's
    (`%(organizer_id)s`) and its scan id is free: the new id, or no row."""
    quote = connection.ops.quote_name
    fields = insert_fields(ScanRecord)
    columns = ", ".join(quote(f.column) for f in fields)
    values = ", ".join(
        "e.id" if f.column == "event_id" else f"%(claim_{f.column})s" for f in fields
    )
    return (
        f"INSERT INTO {quote(ScanRecord._meta.db_table)} ({columns})"
        f" SELECT {values} FROM {quote(Event._meta.db_table)} AS e"
        " WHERE e.id = %(event_id)s AND e.organizer_id = %(organizer_id)s"
        " ON CONFLICT (event_id, scan_id) DO NOTHING RETURNING id"
    )


def scan_claim_orm(*, organizer_id: int, record: ScanRecord) -> int | None:
    """`scan_claim` by the ORM: what the statement replaces."""
    if not Event.objects.filter(pk=record.event_id, organizer_id=organizer_id).exists():
        return None
    try:
        with transaction.atomic():
            record.save(force_insert=True)
    except IntegrityError:
        return None
    return record.pk


@replaces(scan_claim_orm)
def scan_claim(*, organizer_id: int, record: ScanRecord) -> int | None:
    """Insert `record` (unsaved, its `event_id` set) when its event is the organizer's and its
    scan id is not taken in the event; its new id, else None."""
    params = insert_params(record, name="claim") | {
        "event_id": record.event_id,
        "organizer_id": organizer_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(scan_claim_sql(), params)
        row = cursor.fetchone()
    return row[0] if row is not None else None


# --- A batch upload chunk's tickets ---------------------------------------------------------


_SAVED = ("status", "used_at", "updated_at")


def tickets_save_orm(*, tickets: list[Ticket]) -> None:
    """`tickets_save` by the ORM: `bulk_update`, which writes a CASE over every row for each
    field, evaluated row by row (for a chunk's hundred tickets, more than the rest of the
    chunk)."""
    Ticket.objects.bulk_update(tickets, _SAVED)


@replaces(tickets_save_orm)
def tickets_save(*, tickets: list[Ticket]) -> None:
    """Write the tickets' status, used_at and updated_at in one UPDATE from a VALUES list."""
    if not tickets:
        return
    connection = transaction.get_connection()
    fields = [Ticket._meta.get_field(name) for name in _SAVED]
    # PostgreSQL types a VALUES column from its values: all NULL would be text.
    at = "CAST(%s AS timestamp with time zone)" if connection.vendor == "postgresql" else "%s"
    rows = ", ".join([f"(%s, %s, {at}, {at})"] * len(tickets))
    params = [
        value
        for ticket in tickets
        for value in (
            ticket.pk,
            *(
                field.get_db_prep_save(getattr(ticket, field.attname), connection)
                for field in fields
            ),
        )
    ]
    table = Ticket._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET status = v.column2, used_at = v.column3, updated_at = v.column4"
            f" FROM (VALUES {rows}) AS v WHERE {table}.id = v.column1",
            params,
        )


# --- The sync feed --------------------------------------------------------------------------


# The oldest transaction still running, of this database or of an unknown one (a transaction
# listed as running but gone from pg_stat_activity by now counts, to be safe), else the next id.
_HORIZON_SQL = """
    SELECT LEAST(
        pg_snapshot_xmax(s)::text::bigint,
        (
            SELECT MIN(x::text::bigint) FROM pg_snapshot_xip(s) AS x
            WHERE NOT EXISTS (
                SELECT 1 FROM pg_stat_activity AS a
                WHERE a.backend_xid = x::xid
                  AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
            )
        )
    ) AS horizon
    FROM pg_current_snapshot() AS s
"""

FIELDS = (
    *("id", "reference_code", "nfc_uid", "status", "order__status", "ticket_type_id"),
    *("ticket_type__name", "firstname", "lastname", "used_at", "updated_at"),
    *("change_xid", "change_seq"),
)


@without_orm_twin(
    "asks the server for its current snapshot and running transactions (pg_current_snapshot, "
    "pg_stat_activity): no table, nothing the ORM can query"
)
def horizon() -> int | None:
    """The feed's horizon on the database the page is read from (a replica's is where its
    replay stands); None on SQLite, which has none."""
    connection = connections[router.db_for_read(Ticket)]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(_HORIZON_SQL)
        names = [column[0] for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))["horizon"]


def tickets_changed_orm(
    *, event_id: int, xid: int, seq: int, below: int | None, limit: int
) -> list[dict[str, Any]]:
    """`tickets_changed` by the ORM: the position as an OR of two comparisons, which the
    (change_xid, change_seq) index serves worse than one row comparison."""
    after = Q(change_xid__gt=xid) | Q(change_xid=xid, change_seq__gt=seq)
    return _page(Ticket.objects.filter(after, event_id=event_id), below, limit)


@replaces(tickets_changed_orm)
def tickets_changed(
    *, event_id: int, xid: int, seq: int, below: int | None, limit: int
) -> list[dict[str, Any]]:
    """The event's tickets changed after the position (`xid`, `seq`), written below the
    horizon `below` (None: no horizon), in change order, at most `limit`: `FIELDS` by name."""
    table = Ticket._meta.db_table
    after = RawSQL(
        f'("{table}"."change_xid", "{table}"."change_seq") > (%s, %s)',
        (xid, seq),
        output_field=BooleanField(),
    )
    return _page(Ticket.objects.filter(after, event_id=event_id), below, limit)


def _page(queryset, below: int | None, limit: int) -> list[dict[str, Any]]:
    if below is not None:
        queryset = queryset.filter(change_xid__lt=below)
    return list(queryset.order_by("change_xid", "change_seq").values(*FIELDS)[:limit])


# --- The live counts ------------------------------------------------------------------------


BUCKET_SECONDS = 15 * 60

# A 15-minute bucket by the UTC epoch is also one on the quarter hour in the site time zone:
# every zone's offset since 1972 is a whole number of quarter hours, and check-in times are
# from 2000 on (`checkin.inputs.USED_AT_EARLIEST`).
_BUCKET = {
    "postgresql": f"FLOOR(EXTRACT(EPOCH FROM l.at) / {BUCKET_SECONDS})::bigint",
    "sqlite": f"CAST(strftime('%%s', l.at) AS INTEGER) / {BUCKET_SECONDS}",
}
# When the figures are exact, in microseconds since the epoch, told by the database that counts
# them: its clock, or on a replica still replaying WAL it has received, the commit time of the
# last transaction it replayed (what it serves is the primary's data as of then).
_DATA_TIME = {
    "postgresql": """
        UNION ALL
        SELECT 3, NULL, NULL, (EXTRACT(EPOCH FROM CASE
            WHEN pg_is_in_recovery()
                AND pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn()
            THEN LEAST(pg_last_xact_replay_timestamp(), statement_timestamp())
            ELSE statement_timestamp() END) * 1000000)::bigint""",
    "sqlite": "",
}


@dataclass
class Counts:
    """An event's counts, as one snapshot saw them."""

    tickets: dict[tuple[int, str], int] = field(default_factory=dict)  # (ticket type, status)
    check_in_types: dict[int, int] = field(default_factory=dict)  # check-ins per type
    buckets: dict[int, int] = field(default_factory=dict)  # check-ins per quarter hour
    generated_at: datetime | None = None  # when exact, as the database tells; None: now


def _counts_sql(vendor: str) -> str:
    ticket, check_in, log = (
        Ticket._meta.db_table,
        TicketCheckIn._meta.db_table,
        CheckInLog._meta.db_table,
    )
    return f"""
        SELECT 0 AS part, t.ticket_type_id AS key, t.status AS status, COUNT(*) AS n
        FROM {ticket} AS t
        WHERE t.event_id = %(event_id)s GROUP BY t.ticket_type_id, t.status
        UNION ALL
        SELECT 1, c.check_in_type_id, NULL, COUNT(*) FROM {check_in} AS c
        WHERE c.check_in_type_id IN (
            SELECT id FROM {CheckInType._meta.db_table} WHERE event_id = %(event_id)s
        )
        GROUP BY c.check_in_type_id
        UNION ALL
        SELECT 2, {_BUCKET[vendor]}, NULL, COUNT(*) FROM {log} AS l
        WHERE l.event_id = %(event_id)s AND l.action = '{CheckInLog.Action.CHECK_IN}'
          AND l.error IS NULL
        GROUP BY 2{_DATA_TIME[vendor]}
    """


def check_in_counts_orm(*, event_id: int) -> Counts:
    """`check_in_counts` by the ORM: three queries (three snapshots, unless in a repeatable-read
    transaction), the buckets counted here; the time is this process's clock."""
    counts = Counts(generated_at=timezone.now())
    tickets = Ticket.objects.filter(event_id=event_id).values("ticket_type_id", "status")
    for row in tickets.annotate(n=Count("id")).order_by():
        counts.tickets[(row["ticket_type_id"], row["status"])] = row["n"]
    check_ins = TicketCheckIn.objects.filter(check_in_type__event_id=event_id)
    for row in check_ins.values("check_in_type_id").annotate(n=Count("id")).order_by():
        counts.check_in_types[row["check_in_type_id"]] = row["n"]
    times = CheckInLog.objects.filter(
        event_id=event_id, action=CheckInLog.Action.CHECK_IN, error__isnull=True
    ).values_list("at", flat=True)
    counts.buckets = dict(Counter(int(at.timestamp()) // BUCKET_SECONDS for at in times))
    return counts


@replaces(check_in_counts_orm)
def check_in_counts(*, event_id: int) -> Counts:
    """The event's counts in one statement, on the database the router reads tickets from (a
    replica for the stats endpoint, when one is fresh)."""
    reading = connections[router.db_for_read(Ticket)]
    counts = Counts()
    with reading.cursor() as cursor:
        cursor.execute(_counts_sql(reading.vendor), {"event_id": event_id})
        rows = fetch_dicts(cursor)
    for row in rows:
        if row["part"] == 0:
            counts.tickets[(row["key"], row["status"])] = row["n"]
        elif row["part"] == 1:
            counts.check_in_types[row["key"]] = row["n"]
        elif row["part"] == 2:
            counts.buckets[int(row["key"])] = row["n"]
        else:
            counts.generated_at = datetime.fromtimestamp(row["n"] / 1_000_000, tz=UTC)
    return counts

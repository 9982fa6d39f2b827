"""Live check-in counts of an event (CONTRACT §12): exact, in a fixed number of statements.

Every count comes from one statement (a UNION ALL of three aggregates), so the figures are of
one snapshot and agree with each other; the ticket types and check-in types are read beside it.
Each aggregate reads one index: tickets by (event, ticket type, status), the per-type check-ins
by check-in type, the audit rows of successful check-ins by (event, time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, connections, router
from django.utils import timezone

from events.models import CheckInType, Event, TicketType
from tickets.models import Ticket

from .models import CheckInLog, TicketCheckIn

BUCKET_SECONDS = 15 * 60
# The timeline ends with the last bucket holding a check-in and spans at most 14 days: every
# bucket from the first check-in would be hundreds of thousands of empty ones after a single
# scan from a gate whose clock was years off (`used_at` may go back to 2000). Older check-ins
# still count in every other figure.
TIMELINE_MAX_BUCKETS = 14 * 24 * 4

# A 15-minute bucket by the UTC epoch is also one on the quarter hour in the site time zone:
# every zone's offset since 1972 is a whole number of quarter hours, and check-in times are
# from 2000 on (`tickets.inputs.USED_AT_EARLIEST`).
_BUCKET = {
    "postgresql": f"FLOOR(EXTRACT(EPOCH FROM l.at) / {BUCKET_SECONDS})::bigint",
    "sqlite": f"CAST(strftime('%%s', l.at) AS INTEGER) / {BUCKET_SECONDS}",
}


@dataclass(frozen=True)
class TypeCount:
    id: int
    name: str
    sold: int = 0
    checked_in: int = 0


@dataclass(frozen=True)
class Bucket:
    start: datetime
    end: datetime
    check_ins: int


@dataclass(frozen=True)
class CheckInStats:
    event_id: int
    tickets: dict[str, int]  # total, active, used, revoked
    ticket_types: list[TypeCount]
    check_in_types: list[TypeCount]
    timeline: list[Bucket]
    generated_at: datetime


def _counts_sql() -> str:
    ticket, check_in, log = (
        Ticket._meta.db_table,
        TicketCheckIn._meta.db_table,
        CheckInLog._meta.db_table,
    )
    return f"""
        SELECT 0, t.ticket_type_id, t.status, COUNT(*) FROM {ticket} AS t
        WHERE t.event_id = %(event_id)s GROUP BY t.ticket_type_id, t.status
        UNION ALL
        SELECT 1, c.check_in_type_id, NULL, COUNT(*) FROM {check_in} AS c
        WHERE c.check_in_type_id IN (
            SELECT id FROM {CheckInType._meta.db_table} WHERE event_id = %(event_id)s
        )
        GROUP BY c.check_in_type_id
        UNION ALL
        SELECT 2, {_BUCKET[connection.vendor]}, NULL, COUNT(*) FROM {log} AS l
        WHERE l.event_id = %(event_id)s AND l.action = '{CheckInLog.Action.CHECK_IN}'
          AND l.error IS NULL
        GROUP BY 2
    """


def event_check_in_stats(*, event: Event) -> CheckInStats:
    """The event's counts now: tickets by status, per ticket type and check-in type, and the
    successful check-ins per quarter hour from the first to the last (empty ones included).

    Three statements, whatever the event's size.
    """
    generated_at = timezone.now()
    by_status: dict[str, int] = dict.fromkeys(Ticket.Status.values, 0)
    per_type: dict[int, dict[str, int]] = {}
    per_check_in_type: dict[int, int] = {}
    buckets: dict[int, int] = {}
    # Where the router reads tickets from: a replica for the stats endpoint, when one is fresh.
    with connections[router.db_for_read(Ticket)].cursor() as cursor:
        cursor.execute(_counts_sql(), {"event_id": event.pk})
        for part, key, status, count in cursor.fetchall():
            if part == 0:
                by_status[status] = by_status.get(status, 0) + count
                per_type.setdefault(key, {})[status] = count
            elif part == 1:
                per_check_in_type[key] = count
            else:
                buckets[int(key)] = count
    ticket_types = [
        TypeCount(
            id=type_id,
            name=name,
            sold=sum(n for s, n in per_type.get(type_id, {}).items() if s != Ticket.Status.REVOKED),
            checked_in=per_type.get(type_id, {}).get(Ticket.Status.USED, 0),
        )
        for type_id, name in TicketType.objects.filter(event=event).values_list("id", "name")
    ]
    check_in_types = [
        TypeCount(id=type_id, name=name, checked_in=per_check_in_type.get(type_id, 0))
        for type_id, name in CheckInType.objects.filter(event=event).values_list("id", "name")
    ]
    return CheckInStats(
        event_id=event.pk,
        tickets={"total": sum(by_status.values()), **by_status},
        ticket_types=ticket_types,
        check_in_types=check_in_types,
        timeline=_timeline(buckets),
        generated_at=generated_at,
    )


def _timeline(buckets: dict[int, int]) -> list[Bucket]:
    if not buckets:
        return []
    step = timedelta(seconds=BUCKET_SECONDS)
    last = max(buckets)
    start = max(min(buckets), last - TIMELINE_MAX_BUCKETS + 1)
    first = datetime.fromtimestamp(start * BUCKET_SECONDS, tz=UTC)
    return [
        Bucket(start=first + i * step, end=first + (i + 1) * step, check_ins=buckets.get(n, 0))
        for i, n in enumerate(range(start, last + 1))
    ]

"""Live check-in counts of an event (CONTRACT §12): exact, in a fixed number of statements.

Every count comes from one statement (`checkin.statements.check_in_counts`), so the figures are
of one snapshot and agree with each other; the ticket types and check-in types are read beside
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from events.models import CheckInType, Event, TicketType
from tickets.models import Ticket

from .statements import BUCKET_SECONDS, check_in_counts

# The timeline ends with the last bucket holding a check-in and spans at most 14 days: every
# bucket from the first check-in would be hundreds of thousands of empty ones after a single
# scan from a gate whose clock was years off (`used_at` may go back to 2000). Older check-ins
# still count in every other figure.
TIMELINE_MAX_BUCKETS = 14 * 24 * 4


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


def event_check_in_stats(*, event: Event) -> CheckInStats:
    """The event's counts now: tickets by status, per ticket type and check-in type, and the
    successful check-ins per quarter hour from the first to the last (empty ones included).

    Three statements, whatever the event's size. `generated_at`: when the counts are exact, as
    the database that counted them tells (a lagging replica's data is older than its clock).
    """
    asked = timezone.now()
    counts = check_in_counts(event_id=event.pk)
    by_status: dict[str, int] = dict.fromkeys(Ticket.Status.values, 0)
    per_type: dict[int, dict[str, int]] = {}
    for (type_id, status), count in counts.tickets.items():
        by_status[status] = by_status.get(status, 0) + count
        per_type.setdefault(type_id, {})[status] = count
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
        TypeCount(id=type_id, name=name, checked_in=counts.check_in_types.get(type_id, 0))
        for type_id, name in CheckInType.objects.filter(event=event).values_list("id", "name")
    ]
    return CheckInStats(
        event_id=event.pk,
        tickets={"total": sum(by_status.values()), **by_status},
        ticket_types=ticket_types,
        check_in_types=check_in_types,
        timeline=_timeline(counts.buckets),
        generated_at=counts.generated_at or asked,
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

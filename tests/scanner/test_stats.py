"""GET .../events/{e}/check_in_stats: the door manager's live counts (CONTRACT §12)."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import CheckInTypeFactory, TicketFactory, TicketTypeFactory
from tickets.models import Ticket

from .helpers import stats_url
from .test_batch import upload

pytestmark = pytest.mark.django_db

BANGKOK = ZoneInfo("Asia/Bangkok")


def _scan(scan_id, ticket, at, **fields):
    return {"id": scan_id, "ticket_id": ticket.id, "used_at": at, **fields}


def test_stats_simple_mode_counts_and_timeline(client, event, ticket_type):
    vip = TicketTypeFactory(event=event, name="VIP", quantity=10)
    empty = TicketTypeFactory(event=event, name="Empty", quantity=10)
    a, b, _ = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(3))
    d = TicketFactory(event=event, ticket_type=vip)
    TicketFactory(event=event, ticket_type=ticket_type, status=Ticket.Status.REVOKED)
    TicketFactory()  # another event
    upload(
        client,
        event,
        [
            _scan("stat-0001", a, "2026-01-10T19:01:00+07:00"),
            _scan("stat-0002", b, "2026-01-10T19:14:59+07:00"),
            _scan("stat-0003", d, "2026-01-10T19:50:00+07:00"),
            _scan("stat-0004", b, "2026-01-10T19:55:00+07:00", action="renew"),
            _scan("stat-0005", b, "2026-01-10T19:58:00+07:00"),  # in again: counts again
            _scan("stat-0006", a, "2026-01-10T20:00:00+07:00"),  # rejected: not counted
        ],
    )

    response = client.get(stats_url(event))

    assert response.status_code == 200
    body = response.json()
    assert body["generated_at"]
    del body["generated_at"]
    assert body == {
        "success": True,
        "event_id": event.id,
        "tickets": {"total": 5, "active": 1, "used": 3, "revoked": 1},
        "ticket_types": [
            {"ticket_type_id": ticket_type.id, "name": "Regular", "sold": 3, "checked_in": 2},
            {"ticket_type_id": vip.id, "name": "VIP", "sold": 1, "checked_in": 1},
            {"ticket_type_id": empty.id, "name": "Empty", "sold": 0, "checked_in": 0},
        ],
        "check_in_types": [],
        "timeline": [
            {
                "start": "2026-01-10T19:00:00+07:00",
                "end": "2026-01-10T19:15:00+07:00",
                "check_ins": 2,
            },
            {
                "start": "2026-01-10T19:15:00+07:00",
                "end": "2026-01-10T19:30:00+07:00",
                "check_ins": 0,
            },
            {
                "start": "2026-01-10T19:30:00+07:00",
                "end": "2026-01-10T19:45:00+07:00",
                "check_ins": 0,
            },
            {
                "start": "2026-01-10T19:45:00+07:00",
                "end": "2026-01-10T20:00:00+07:00",
                "check_ins": 2,
            },
        ],
    }


def test_stats_multiple_mode_counts_each_type(client, event, ticket_type):
    day1, day2 = (CheckInTypeFactory(event=event, name=n) for n in ("Day 1", "Day 2"))
    a, b = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2))
    at = "2026-01-10T08:20:00+07:00"
    upload(
        client,
        event,
        [
            _scan("multi-0001", a, at, check_in_type_ids=[day1.id, day2.id]),
            _scan("multi-0002", b, at, check_in_type_ids=[day1.id]),
            _scan("multi-0003", a, at, action="renew", check_in_type_ids=[day2.id]),
        ],
    )

    body = client.get(stats_url(event)).json()

    assert body["tickets"] == {"total": 2, "active": 0, "used": 2, "revoked": 0}
    assert body["check_in_types"] == [
        {"check_in_type_id": day1.id, "name": "Day 1", "checked_in": 2},
        {"check_in_type_id": day2.id, "name": "Day 2", "checked_in": 0},
    ]
    # Each admitted type counts once; the renew is not subtracted.
    assert body["timeline"] == [
        {
            "start": "2026-01-10T08:15:00+07:00",
            "end": "2026-01-10T08:30:00+07:00",
            "check_ins": 3,
        }
    ]


def test_stats_of_an_event_without_check_ins(client, event, ticket_type):
    body = client.get(stats_url(event)).json()
    assert (body["tickets"], body["timeline"]) == (
        {"total": 0, "active": 0, "used": 0, "revoked": 0},
        [],
    )
    assert datetime.fromisoformat(body["generated_at"]).utcoffset() == BANGKOK.utcoffset(
        datetime(2026, 1, 1)
    )


def test_stats_cost_the_same_statements_whatever_the_size(client, event, ticket_type):
    day1 = CheckInTypeFactory(event=event, name="Day 1")

    def statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(stats_url(event)).status_code == 200
        return len(queries)

    client.get(stats_url(event))  # the token and the caller's role, now known to the process
    empty = statements()
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(20)]
    upload(
        client,
        event,
        [
            _scan(f"size-{i:04d}", t, f"2026-01-10T0{i % 10}:00:00Z", check_in_type_ids=[day1.id])
            for i, t in enumerate(tickets)
        ],
    )
    # The event, the counts, the ticket types, the check-in types.
    assert statements() == empty == 4


def test_stats_of_another_organizers_event_is_404(client, organizer):
    other = TicketFactory().event
    response = client.get(stats_url(other).replace(f"/{other.organizer_id}/", f"/{organizer.id}/"))
    assert (response.status_code, response.json()["error"]) == (404, "not_found")


def test_the_timeline_spans_at_most_14_days_before_the_last_check_in(client, event, ticket_type):
    """One scan from a gate whose clock was years off would otherwise add hundreds of thousands
    of empty buckets; it still counts everywhere else."""
    early, late = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2))
    upload(
        client,
        event,
        [
            _scan("skew-0001", early, "2000-01-01T08:00:00+07:00"),
            _scan("skew-0002", late, "2026-01-10T19:01:00+07:00"),
        ],
    )

    body = client.get(stats_url(event)).json()

    timeline = body["timeline"]
    assert len(timeline) == 14 * 24 * 4
    assert timeline[-1] == {
        "start": "2026-01-10T19:00:00+07:00",
        "end": "2026-01-10T19:15:00+07:00",
        "check_ins": 1,
    }
    assert timeline[0]["start"] == "2025-12-27T19:15:00+07:00"
    assert sum(b["check_ins"] for b in timeline) == 1
    assert body["tickets"]["used"] == 2

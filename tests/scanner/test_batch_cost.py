"""A batch upload's statements do not grow with its scans, on every path (CONTRACT §11).

Fifty scans cost the statements of ten: the tickets are read in one query per chunk and the
scans applied and recorded in bulk, whether they are admitted, rejected or unknown.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from checkin.models import ScanRecord
from tests.factories import CheckInTypeFactory, OrderFactory, TicketFactory
from tickets.models import Order, Ticket

from .helpers import batch_url

pytestmark = pytest.mark.django_db

AT = "2026-01-10T19:30:00+07:00"
# Around the scans: the event, the scan ids already recorded, the event's check-in types (and
# their ticket types); per chunk its transaction (a savepoint here), the tickets (and their
# check-ins), then a statement per kind of write: tickets, check-ins, audit rows, scan records.
MOST = 14


def _tickets(event, ticket_type, kind: str, count: int, batch: int) -> list[dict]:
    """`count` scans of `kind`, each of a ticket of its own."""
    if kind == "unknown":
        return [{"reference_code": f"NOSUCH{batch}{i:04d}"} for i in range(count)]
    status = Ticket.Status.USED if kind == "used" else Ticket.Status.ACTIVE
    paid = Order.Status.PENDING if kind == "unpaid" else Order.Status.PAID
    order = OrderFactory(event=event, status=paid)
    tickets = [
        TicketFactory(event=event, ticket_type=ticket_type, order=order, status=status)
        for _ in range(count)
    ]
    key = "reference_code" if kind == "used" else "ticket_id"
    return [{key: t.reference_code if key == "reference_code" else t.id} for t in tickets]


def _statements(client, event, ticket_type, kind: str, count: int, batch: int, types) -> int:
    scans = [
        {"id": f"cost-{batch}-{i:05d}", "used_at": AT, **key}
        for i, key in enumerate(_tickets(event, ticket_type, kind, count, batch))
    ]
    if types:
        for scan in scans:
            scan["check_in_type_ids"] = [t.id for t in types]
    with CaptureQueriesContext(connection) as queries:
        response = client.post(batch_url(event), {"scans": scans}, format="json")
    assert response.status_code == 200, response.json()
    success = kind in ("fresh", "multi")
    assert [r["success"] for r in response.json()["results"]] == [success] * count
    return len(queries)


@pytest.mark.parametrize("kind", ["fresh", "used", "unpaid", "unknown", "multi"])
def test_batch_statements_do_not_grow_with_its_scans(client, event, ticket_type, kind):
    types = (
        [CheckInTypeFactory(event=event, name=n) for n in ("Day 1", "Day 2")]
        if kind == "multi"
        else []
    )
    # The first request of a token also reads what later ones find in the cache.
    _statements(client, event, ticket_type, kind, 1, 0, types)

    ten = _statements(client, event, ticket_type, kind, 10, 1, types)
    fifty = _statements(client, event, ticket_type, kind, 50, 2, types)

    assert max(ten, fifty) <= MOST, (ten, fifty)
    if connection.vendor == "postgresql":
        assert fifty == ten
    else:  # SQLite takes 999 values per statement: a bulk insert of many rows is split
        assert fifty <= ten + 2
    assert ScanRecord.objects.count() == 61

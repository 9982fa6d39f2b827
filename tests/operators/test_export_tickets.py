"""`export_tickets` and the CSV it shares with the admin: local times, baht, one query."""

import csv
import io
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import OrderFactory, TicketFactory, TicketTypeFactory


def _export(event, *args):
    out = io.StringIO()
    call_command("export_tickets", str(event.pk), *args, stdout=out, stderr=io.StringIO())
    return list(csv.reader(io.StringIO(out.getvalue())))


@pytest.mark.django_db
def test_export_tickets_writes_every_ticket_with_local_times_and_baht(event):
    vip = TicketTypeFactory(event=event, name="VIP", price=150050)
    order = OrderFactory(event=event, status="paid")
    used = TicketFactory(
        event=event,
        ticket_type=vip,
        order=order,
        status="used",
        reference_code="USED0001",
        firstname="Somchai",
        lastname="Jaidee",
        email="somchai@example.com",
        external_id="crm-1",
    )
    used.used_at = datetime(2026, 11, 21, 12, 30, tzinfo=UTC)
    used.save()
    TicketFactory(event=event, ticket_type=vip, order=order, reference_code="FREE0001")
    TicketFactory(reference_code="OTHER001")  # another event's ticket

    rows = _export(event)

    assert rows[0][:7] == [
        "id",
        "reference_code",
        "status",
        "kind",
        "ticket_type_id",
        "ticket_type",
        "price_baht",
    ]
    header = rows[0]
    first = dict(zip(header, rows[1], strict=True))
    assert len(rows) == 3
    assert {k: first[k] for k in ("reference_code", "status", "ticket_type", "price_baht")} == {
        "reference_code": "USED0001",
        "status": "used",
        "ticket_type": "VIP",
        "price_baht": "1500.50",
    }
    assert first["used_at"] == "2026-11-21T19:30:00+07:00"  # the site's zone, Asia/Bangkok
    assert (first["firstname"], first["external_id"], first["order_status"]) == (
        "Somchai",
        "crm-1",
        "paid",
    )
    assert dict(zip(header, rows[2], strict=True))["used_at"] == ""


@pytest.mark.django_db
def test_export_orders_counts_tickets_in_one_query(event, tmp_path):
    ticket_type = TicketTypeFactory(event=event)
    for count in (1, 3):
        order = OrderFactory(event=event, buyer_firstname=f"Buyer{count}")
        for _ in range(count):
            TicketFactory(event=event, ticket_type=ticket_type, order=order)
    path = tmp_path / "orders.csv"

    with CaptureQueriesContext(connection) as queries:
        call_command(
            "export_tickets", str(event.pk), "--orders", "-o", str(path), stderr=io.StringIO()
        )

    rows = list(csv.DictReader(path.open(newline="")))
    assert [(r["buyer_firstname"], r["tickets"]) for r in rows] == [
        ("Buyer1", "1"),
        ("Buyer3", "3"),
    ]
    selects = [q for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    assert len(selects) == 2  # the event, then the orders


@pytest.mark.django_db
def test_export_of_an_unknown_event_is_refused(db):
    with pytest.raises(CommandError, match=r"Event 999999 does not exist\."):
        call_command("export_tickets", "999999")


@pytest.mark.django_db
def test_export_quotes_text_a_spreadsheet_would_run_as_a_formula(event):
    TicketFactory(
        event=event,
        reference_code="FORM0001",
        firstname='=HYPERLINK("http://x.example","click")',
        lastname="@SUM(A1)",
        phone="+66812345678",
    )

    header, row = _export(event)
    ticket = dict(zip(header, row, strict=True))

    assert ticket["firstname"] == '\'=HYPERLINK("http://x.example","click")'
    assert ticket["lastname"] == "'@SUM(A1)"
    assert ticket["phone"] == "+66812345678"  # a plain number stays as it is

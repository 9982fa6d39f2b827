"""`export_tickets` and the CSV and XLSX it shares with the admin: local times, baht, one
query, Thai names that Excel reads right."""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import openpyxl
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import OrderFactory, TicketFactory, TicketTypeFactory


def _export(event, *args):
    out = io.StringIO()
    call_command("export_tickets", str(event.pk), *args, stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert text.startswith("\ufeff")  # the BOM that tells Excel the file is UTF-8
    return list(csv.reader(io.StringIO(text[1:])))


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

    rows = list(csv.DictReader(path.open(newline="", encoding="utf-8-sig")))
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


THAI = ("สมชาย", "ใจดี")


@pytest.mark.django_db
def test_export_file_starts_with_a_bom_and_keeps_thai_names(event, tmp_path):
    TicketFactory(event=event, firstname=THAI[0], lastname=THAI[1], reference_code="THAI0001")
    path = tmp_path / "tickets.csv"

    call_command("export_tickets", str(event.pk), "-o", str(path), stderr=io.StringIO())

    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and data.count(b"\xef\xbb\xbf") == 1
    [row] = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
    assert (row["firstname"], row["lastname"]) == THAI


@pytest.mark.django_db
def test_export_xlsx_reads_back_with_thai_names_numbers_and_local_times(event, tmp_path):
    vip = TicketTypeFactory(event=event, name="VIP", price=150050)
    used = TicketFactory(
        event=event,
        ticket_type=vip,
        firstname=THAI[0],
        lastname=THAI[1],
        reference_code="XLSX0001",
        status="used",
    )
    used.used_at = datetime(2026, 11, 21, 12, 30, tzinfo=UTC)
    used.save()
    TicketFactory(event=event, ticket_type=vip, firstname="=1+2", reference_code="XLSX0002")
    path = tmp_path / "tickets.xlsx"  # the suffix chooses the format
    err = io.StringIO()

    with CaptureQueriesContext(connection) as queries:
        call_command("export_tickets", str(event.pk), "-o", str(path), stderr=err)

    assert err.getvalue().strip() == f"Wrote 2 rows to {path}."
    assert len([q for q in queries.captured_queries if q["sql"].startswith("SELECT")]) == 2
    sheet = openpyxl.load_workbook(path).active
    header, *rows = sheet.iter_rows()
    names = [cell.value for cell in header]
    first = {name: cell for name, cell in zip(names, rows[0], strict=True)}
    assert names[:3] == ["id", "reference_code", "status"] and len(rows) == 2
    assert (first["firstname"].value, first["lastname"].value) == THAI
    assert Decimal(str(first["price_baht"].value)) == Decimal("1500.50")
    assert first["used_at"].value == datetime(2026, 11, 21, 19, 30)  # Asia/Bangkok, no zone
    formula = dict(zip(names, rows[1], strict=True))["firstname"]
    assert (formula.value, formula.data_type) == ("=1+2", "s")  # text, never run


@pytest.mark.django_db
def test_export_orders_as_xlsx_and_xlsx_to_stdout_is_refused(event, tmp_path):
    order = OrderFactory(event=event, buyer_firstname=THAI[0])
    TicketFactory(event=event, order=order)
    path = tmp_path / "orders.out"

    call_command(
        "export_tickets",
        str(event.pk),
        "--orders",
        "--format",
        "xlsx",
        "-o",
        str(path),
        stderr=io.StringIO(),
    )

    rows = list(openpyxl.load_workbook(io.BytesIO(path.read_bytes())).active.values)
    assert rows[0][:2] == ("id", "status")
    order_row = dict(zip(rows[0], rows[1], strict=True))
    assert (order_row["buyer_firstname"], order_row["tickets"]) == (THAI[0], 1)
    with pytest.raises(CommandError, match="binary file: name it with -o"):
        call_command("export_tickets", str(event.pk), "--format", "xlsx")

"""`import_tickets` reads an Excel workbook as it reads a CSV file (issue 40, item 12): what
`export_tickets -o file.xlsx` writes imports back, a file of another kind is refused naming
the formats, and a damaged workbook is refused before anything is saved."""

from io import StringIO

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from tests.factories import EventFactory, OrderFactory, TicketFactory, TicketTypeFactory
from tickets.models import Ticket


def _run(event, path, *args):
    out, err = StringIO(), StringIO()
    try:
        call_command("import_tickets", str(event.pk), str(path), *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), str(exc)
    return out.getvalue(), err.getvalue(), None


def _workbook(path, rows):
    workbook = openpyxl.Workbook()
    for row in rows:
        workbook.active.append(row)
    workbook.save(path)
    return path


@pytest.mark.django_db
def test_a_workbook_from_export_tickets_imports_into_another_event(tmp_path, event):
    source = EventFactory(organizer=event.organizer, title="Source")
    hall = TicketTypeFactory(event=source, name="Hall")
    order = OrderFactory(event=source)
    for i in range(25):
        TicketFactory(
            event=source,
            order=order,
            ticket_type=hall,
            firstname=f"สมชาย{i}",
            lastname="ใจดี",
            email=f"somchai{i}@example.co.th",
            phone=f"+668123456{i:02d}",
            external_id=f"crm-{i}",
            reference_code=f"HALL{i:04d}",
        )
    path = tmp_path / "export.xlsx"
    call_command("export_tickets", str(source.pk), "-o", str(path), stderr=StringIO())
    target_hall = TicketTypeFactory(event=event, name="Hall", quantity=100)

    out, err, error = _run(event, path)

    assert error is None
    assert out.splitlines() == [
        f"Event {event.pk} 'Songkran Beats': 25 rows.",
        "  tickets created: 25",
        "  already imported (same external_id): 0",
        "  rejected: 0",
        "Done.",
    ]
    assert "Ignoring unknown columns: id, status, kind, ticket_type_id, price_baht" in err
    imported = Ticket.objects.filter(event=event, ticket_type=target_hall)
    first = imported.get(external_id="crm-7")
    assert (first.firstname, first.email, first.phone, first.reference_code) == (
        "สมชาย7",
        "somchai7@example.co.th",
        "+66812345607",
        "HALL0007",
    )
    assert imported.count() == 25
    # Imported again: every row is a replay of its external_id.
    out, _, error = _run(event, path)
    assert error is None and "  already imported (same external_id): 25" in out


@pytest.mark.django_db
def test_rows_with_formulas_or_dates_are_rejected_by_row_number(tmp_path, event):
    regular = TicketTypeFactory(event=event, name="Regular")
    path = _workbook(
        tmp_path / "people.xlsx",
        [
            ["firstname", "lastname", "email", "phone", "ticket_type"],
            ["Ok", "One", "ok@example.com", "0812345678", "Regular"],
            ["=A2", "Two", "two@example.com", "0812345678", "Regular"],
        ],
    )

    out, _, error = _run(event, path)

    assert error == "1 row rejected (listed above with their line numbers)."
    assert out.splitlines()[0] == (
        "line 3: firstname: cell A3 holds a formula; the import reads values, not formulas: "
        "copy the column and paste it as values"
    )
    assert list(Ticket.objects.values_list("ticket_type", "email")) == [
        (regular.pk, "ok@example.com")
    ]


@pytest.mark.django_db
def test_another_kind_of_file_is_refused_naming_the_formats(tmp_path, event):
    TicketTypeFactory(event=event, name="Regular")
    path = tmp_path / "people.txt"
    path.write_text(
        "firstname,lastname,email,phone,ticket_type\nOk,One,ok@example.com,0812345678,Regular\n"
    )

    _, _, error = _run(event, path)

    assert error == (
        "The import takes a CSV file (.csv, UTF-8) or an Excel workbook (.xlsx); “people.txt” "
        "is neither. In Excel, save it as CSV UTF-8 or as Excel Workbook. Or pass --format csv "
        "or --format xlsx."
    )
    assert not Ticket.objects.exists()
    assert _run(event, path, "--format", "csv")[2] is None
    assert Ticket.objects.get().email == "ok@example.com"


@pytest.mark.django_db
def test_a_damaged_workbook_is_refused_before_anything_is_saved(tmp_path, event):
    TicketTypeFactory(event=event, name="Regular")
    good = _workbook(
        tmp_path / "good.xlsx",
        [["firstname", "lastname", "email", "phone", "ticket_type"]]
        + [["Ok", f"R{i}", f"r{i}@example.com", "0812345678", "Regular"] for i in range(50)],
    )
    damaged = tmp_path / "damaged.xlsx"
    damaged.write_bytes(good.read_bytes()[:-200])
    csv_named_xlsx = tmp_path / "named.xlsx"
    csv_named_xlsx.write_text("firstname,lastname,email,phone,ticket_type\n")

    for path in (damaged, csv_named_xlsx):
        _, _, error = _run(event, path)
        assert error.startswith("This file is not an Excel workbook (.xlsx) that can be read")
    assert not Ticket.objects.exists()
    _, _, error = _run(event, good, "--delimiter", ";")
    assert error == "--delimiter: only for a CSV file."

"""The admin's import takes an Excel workbook as it takes a CSV file (issue 40, item 12): the
same columns, checks and report, a workbook exported here imports back, and anything else is
refused with a sentence naming the two formats. A bad workbook (damaged, a zip bomb, another
file under an .xlsx name, too large) is refused with a clear message and keeps nothing; a
formula or a date where the import reads text rejects that row."""

import io
import zipfile
from datetime import datetime

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.admin.helpers import messages_of
from tests.admin.test_import_upload import _confirm_fields
from tests.factories import EventFactory, OrderFactory, TicketFactory, TicketTypeFactory
from tickets.models import ImportUpload, Ticket
from tickets.services.exporting import XLSX_CONTENT_TYPE

COLUMNS = ["firstname", "lastname", "email", "phone", "ticket_type", "external_id", "created_at"]
FORMATS = (
    "The import takes a CSV file (.csv, UTF-8) or an Excel workbook (.xlsx); “{name}” is "
    "neither. In Excel, save it as CSV UTF-8 or as Excel Workbook."
)
NOT_A_WORKBOOK = (
    "This file is not an Excel workbook (.xlsx) that can be read: it is damaged, or it is "
    "another kind of file with an .xlsx name. Save it again from Excel as an Excel Workbook "
    "(.xlsx) or as CSV UTF-8 (.csv)."
)
BOMB = (
    "This workbook unpacks to far more data than its rows can hold, so it is not read. Save it "
    "again from Excel, or as CSV UTF-8 (.csv)."
)


def _url(event) -> str:
    return reverse("admin:tickets_ticket_import") + f"?event_id={event.pk}"


def _upload(client, event, name: str, data: bytes):
    upload = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    return client.post(_url(event), {"file": upload, "preview": "1"})


def _workbook(rows: list[list]) -> bytes:
    workbook = openpyxl.Workbook()
    for row in rows:
        workbook.active.append(row)
    output = io.BytesIO()
    workbook.save(output)
    return output.getvalue()


def _refused(response, message: str) -> None:
    assert response.status_code == 200
    assert response.context["form"].errors == {"file": [message]}
    assert not ImportUpload.objects.exists()
    assert "report" not in response.context


@pytest.mark.django_db
def test_a_workbook_exported_from_an_event_imports_into_another(admin_client_a, world_a):
    source = EventFactory(organizer=world_a.organizer, title="A Source")
    people = [
        ("สมชาย", "ใจดี", "somchai@example.co.th", "+66812345678", "Hall", "crm-1", "SOMCHAI1"),
        ("Malee", "Srisuk", "malee@example.com", "+66898765432", "VIP", None, "MALEE002"),
        ("=cmd", "Dee", "dee@example.com", "+66811111111", "Hall", "crm-3", "DEE00003"),
    ]
    types = {name: TicketTypeFactory(event=source, name=name) for name in ("Hall", "VIP")}
    order = OrderFactory(event=source)
    for first, last, email, phone, type_name, external_id, code in people:
        TicketFactory(
            event=source,
            order=order,
            ticket_type=types[type_name],
            firstname=first,
            lastname=last,
            email=email,
            phone=phone,
            external_id=external_id,
            reference_code=code,
        )
    exported = admin_client_a.get(
        reverse("admin:tickets_ticket_export"), {"event_id": source.pk, "format": "xlsx"}
    )
    assert exported["Content-Type"] == XLSX_CONTENT_TYPE
    target = world_a.event
    hall = TicketTypeFactory(event=target, name="Hall")
    vip = TicketTypeFactory(event=target, name="VIP")

    preview = _upload(
        admin_client_a, target, "event-tickets.xlsx", b"".join(exported.streaming_content)
    )

    assert preview.status_code == 200
    report = preview.context["report"]
    assert (report.created, report.existing, report.rejected) == (3, 0, 0)
    assert not Ticket.objects.filter(event=target, ticket_type__in=[hall, vip]).exists()
    done = admin_client_a.post(_url(target), _confirm_fields(preview))
    assert messages_of(admin_client_a.get(done["Location"])) == [
        "Imported 3 tickets (0 already imported, 0 rejected)."
    ]
    imported = Ticket.objects.filter(event=target, ticket_type__in=[hall, vip]).order_by("id")
    assert [
        (
            t.firstname,
            t.lastname,
            t.email,
            t.phone,
            t.ticket_type.name,
            t.external_id,
            t.reference_code,
        )
        for t in imported
    ] == people
    assert {(t.kind, t.order.status) for t in imported} == {("external", "paid")}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", ["attendees.xls", "attendees.ods", "attendees.txt", "attendees.pdf", "attendees"]
)
def test_a_file_neither_csv_nor_xlsx_is_refused_naming_both_formats(admin_client_a, world_a, name):
    text = "firstname,lastname,email,phone,ticket_type\nA,B,a@example.com,0812345678,A Regular\n"

    response = _upload(admin_client_a, world_a.event, name, text.encode())

    _refused(response, FORMATS.format(name=name))
    assert "--" not in FORMATS and "manage.py" not in FORMATS


def _zip(parts: dict[str, bytes]) -> bytes:
    output = io.BytesIO()
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return output.getvalue()


def _truncated() -> bytes:
    data = _workbook([COLUMNS, ["A", "B", "a@example.com", "0812345678", "A Regular"]])
    return data[: len(data) // 2]


def _damaged_sheet() -> bytes:
    """A real workbook whose sheet is not XML."""
    source = zipfile.ZipFile(io.BytesIO(_workbook([COLUMNS])))
    parts = {info.filename: source.read(info) for info in source.infolist()}
    parts["xl/worksheets/sheet1.xml"] = b"<worksheet><sheetData><row r='1'><c"
    return _zip(parts)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: b"firstname,lastname,email,phone,ticket_type\n", NOT_A_WORKBOOK),
        (lambda: b"\x00" * 4096, NOT_A_WORKBOOK),
        (_truncated, NOT_A_WORKBOOK),
        (_damaged_sheet, NOT_A_WORKBOOK),
        (lambda: _zip({"word/document.xml": b"<document/>"}), NOT_A_WORKBOOK),
        # 64 MB of one repeated row, in a few dozen kilobytes.
        (lambda: _zip({"xl/worksheets/sheet1.xml": b"<row/>" * 11_000_000}), BOMB),
        (lambda: _zip({"xl/sharedStrings.xml": b" " * 70_000_000}), BOMB),
    ],
    ids=["csv-text", "zeros", "truncated", "damaged-sheet", "a-docx", "bomb", "bomb-strings"],
)
def test_a_bad_workbook_is_refused_with_a_clear_message(admin_client_a, world_a, make, message):
    response = _upload(admin_client_a, world_a.event, "attendees.xlsx", make())

    _refused(response, message)
    assert Ticket.objects.filter(event=world_a.event).count() == 2  # the world's own


@pytest.mark.django_db
def test_an_oversized_workbook_is_refused_before_it_is_read(admin_client_a, world_a, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    data = _workbook([COLUMNS] + [["A", "B", "a@example.com", "0812345678", "A Regular"]] * 50)

    response = _upload(admin_client_a, world_a.event, "attendees.xlsx", data)

    size = f"{len(data) / 1024:.1f}\xa0KB"
    _refused(
        response,
        f"The file is {size}; this page takes files up to 1000\xa0bytes. Split it into "
        "smaller files and import each.",
    )


@pytest.mark.django_db
def test_formulas_and_dates_reject_their_rows_only_where_the_import_reads_them(
    admin_client_a, world_a
):
    created = datetime(2026, 11, 20, 18, 30)
    rows = [
        COLUMNS,
        ["Somchai", "Jaidee", "somchai@example.com", 812345678, "A Regular", "crm-1", created],
        ["Malee", "Srisuk", '=LOWER("MALEE@EXAMPLE.COM")', "0898765432", "A Regular", "crm-2"],
        ["Dee", "Dee", "dee@example.com", created, "A Regular", "crm-3"],
        [None] * 7,
        ["Nok", "Noi", "nok@example.com", "0811111111", world_a.ticket_type.pk, 42.0],
    ]

    preview = _upload(admin_client_a, world_a.event, "attendees.xlsx", _workbook(rows))

    report = preview.context["report"]
    assert [(o.line, o.status, o.reason) for o in report.outcomes] == [
        (2, "created", ""),
        (
            3,
            "rejected",
            "email: cell C3 holds a formula; the import reads values, not formulas: copy the "
            "column and paste it as values",
        ),
        (
            4,
            "rejected",
            "phone: cell D4 holds a date or time, not text: format the column as Text and type "
            "the value again",
        ),
        (6, "created", ""),
    ]
    done = admin_client_a.post(_url(world_a.event), _confirm_fields(preview))
    assert messages_of(admin_client_a.get(done["Location"])) == [
        "Imported 2 tickets (0 already imported, 2 rejected)."
    ]
    somchai = Ticket.objects.get(external_id="crm-1")
    nok = Ticket.objects.get(external_id="42")
    assert (somchai.phone, nok.ticket_type, nok.phone) == (
        "+66812345678",
        world_a.ticket_type,
        "+66811111111",
    )
    assert not Ticket.objects.filter(external_id__in=["crm-2", "crm-3"]).exists()


@pytest.mark.django_db
def test_a_csv_file_in_another_encoding_is_told_what_to_do_without_a_command_line_flag(
    admin_client_a, world_a
):
    text = "firstname,lastname,email,phone,ticket_type\nJosé,Niño,j@example.com,0812345678,A\n"

    response = _upload(admin_client_a, world_a.event, "attendees.csv", text.encode("latin-1"))

    _refused(
        response,
        "line 2 is not valid utf-8-sig (invalid continuation byte). Save it from Excel as CSV "
        "UTF-8 (.csv), or upload the workbook (.xlsx) itself.",
    )


@pytest.mark.django_db
def test_import_page_names_both_formats_and_offers_them_to_the_file_picker(admin_client_a, world_a):
    html = admin_client_a.get(_url(world_a.event)).content.decode()

    assert 'accept=".csv,.xlsx"' in html
    assert "or an Excel workbook (.xlsx, its first sheet)" in html
    assert "manage.py" not in html

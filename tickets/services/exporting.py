"""Exports of an event's tickets and orders, as CSV or XLSX, for `export_tickets` and the admin.

Rows are read with a database cursor a chunk at a time (`iterator(chunk_size=...)`: a
server-side cursor on PostgreSQL) and rendered one line at a time, so 200,000 tickets never sit
in memory, whether they go to a file or to a streamed HTTP response (openpyxl's write-only
workbook keeps its rows in a temporary file too). Times are local (the site time zone; in CSV
ISO 8601 with offset, as the API renders them); prices are in baht.

Both open in Excel with Thai names intact: the CSV starts with a UTF-8 byte order mark (without
it Excel reads the file as the system's code page), and XLSX is Unicode throughout.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal
from typing import BinaryIO

from django.db.models import Count, QuerySet
from django.utils import timezone

from ticketing.api.fields import satangs_to_decimal_string

from ..models import Order, Ticket

CHUNK_ROWS = 2000
# The UTF-8 byte order mark: what tells Excel a CSV file is UTF-8.
CSV_BOM = "\ufeff"
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

TICKET_COLUMNS = (
    ("id", "id"),
    ("reference_code", "reference_code"),
    ("status", "status"),
    ("kind", "kind"),
    ("ticket_type_id", "ticket_type_id"),
    ("ticket_type", "ticket_type__name"),
    ("price_baht", "ticket_type__price"),
    ("firstname", "firstname"),
    ("lastname", "lastname"),
    ("email", "email"),
    ("phone", "phone"),
    ("external_id", "external_id"),
    ("nfc_uid", "nfc_uid"),
    ("order_id", "order_id"),
    ("order_status", "order__status"),
    ("used_at", "used_at"),
    ("revoke_note", "revoke_note"),
    ("created_at", "created_at"),
)

ORDER_COLUMNS = (
    ("id", "id"),
    ("status", "status"),
    ("kind", "kind"),
    ("buyer_firstname", "buyer_firstname"),
    ("buyer_lastname", "buyer_lastname"),
    ("buyer_email", "buyer_email"),
    ("buyer_phone", "buyer_phone"),
    ("tickets", "ticket_count"),
    ("paid_at", "paid_at"),
    ("cancelled_at", "cancelled_at"),
    ("created_at", "created_at"),
)


class _Line:
    """A file-like object whose `write` returns what was written: csv.writer renders one row
    into it and the caller yields that line (Django's streaming CSV recipe)."""

    def write(self, value: str) -> str:
        return value


# A cell starting with one of these is a formula to a spreadsheet: a holder named
# "=HYPERLINK(...)" would run when staff open the file. Such text is written quoted with "'",
# unless it is a plain number (an E.164 phone, a negative amount).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?")


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return timezone.localtime(value).isoformat(timespec="seconds")
    if (
        isinstance(value, str)
        and value.startswith(_FORMULA_STARTS)
        and not _PLAIN_NUMBER.fullmatch(value)
    ):
        return "'" + value
    return str(value)


def _lines(header: tuple[str, ...], rows: Iterable) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield CSV_BOM + writer.writerow(header)
    for row in rows:
        yield writer.writerow([_cell(value) for value in row])


def _xlsx(header: tuple[str, ...], rows: Iterable, output: BinaryIO, title: str) -> int:
    """Write the rows as a one-sheet workbook to `output`; returns how many rows.

    Each value as the sheet should hold it: a local time without zone (Excel has none), text
    without the control characters XML cannot carry, and always text (never a formula).
    """
    # Imported here: a tenth of a second that every process (a worker, `import_tickets`)
    # would pay at start for the few that export.
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet(title)
    sheet.freeze_panes = "A2"

    def cell(value):
        if isinstance(value, datetime):
            value = WriteOnlyCell(sheet, value=timezone.localtime(value).replace(tzinfo=None))
            value.number_format = "yyyy-mm-dd hh:mm:ss"
        elif isinstance(value, str):
            value = ILLEGAL_CHARACTERS_RE.sub("", value)
            if value.startswith("="):  # openpyxl would store it as a formula
                value = WriteOnlyCell(sheet, value=value)
                value.data_type = "s"
        return value

    sheet.append(header)
    count = 0
    for count, row in enumerate(rows, start=1):  # noqa: B007 (the count is returned)
        sheet.append([cell(value) for value in row])
    workbook.save(output)
    return count


def _ticket_rows(tickets: QuerySet[Ticket], price) -> Iterator[list]:
    """The tickets' values in TICKET_COLUMNS order, in id order, the price (satangs) mapped by
    `price`; one query, streamed."""
    fields = [field for _, field in TICKET_COLUMNS]
    at = fields.index("ticket_type__price")
    for row in tickets.order_by("id").values_list(*fields).iterator(chunk_size=CHUNK_ROWS):
        row = list(row)
        row[at] = price(row[at])
        yield row


def _order_rows(orders: QuerySet[Order]) -> Iterator[tuple]:
    """The orders' values in ORDER_COLUMNS order with their ticket counts, in id order; one
    query, streamed."""
    return (
        orders.annotate(ticket_count=Count("tickets"))
        .order_by("id")
        .values_list(*(field for _, field in ORDER_COLUMNS))
        .iterator(chunk_size=CHUNK_ROWS)
    )


def _header(columns) -> tuple[str, ...]:
    return tuple(name for name, _ in columns)


def tickets_csv(tickets: QuerySet[Ticket]) -> Iterator[str]:
    """The tickets as CSV lines (BOM and header first), in id order; one query, streamed."""
    return _lines(_header(TICKET_COLUMNS), _ticket_rows(tickets, satangs_to_decimal_string))


def orders_csv(orders: QuerySet[Order]) -> Iterator[str]:
    """The orders as CSV lines (BOM and header first) with their ticket counts, in id order."""
    return _lines(_header(ORDER_COLUMNS), _order_rows(orders))


def _baht(satangs: int | None) -> Decimal | None:
    return None if satangs is None else Decimal(satangs_to_decimal_string(satangs))


def tickets_xlsx(tickets: QuerySet[Ticket], output: BinaryIO) -> int:
    """The tickets as an XLSX workbook written to `output` (prices as numbers, in baht);
    returns how many tickets."""
    return _xlsx(_header(TICKET_COLUMNS), _ticket_rows(tickets, _baht), output, "Tickets")


def orders_xlsx(orders: QuerySet[Order], output: BinaryIO) -> int:
    """The orders as an XLSX workbook written to `output`; returns how many orders."""
    return _xlsx(_header(ORDER_COLUMNS), _order_rows(orders), output, "Orders")

"""CSV exports of an event's tickets and orders, for `export_tickets` and the admin.

Rows are read with a database cursor a chunk at a time (`iterator(chunk_size=...)`: a
server-side cursor on PostgreSQL) and rendered one line at a time, so 200,000 tickets never sit
in memory, whether they go to a file or to a streamed HTTP response. Times are local (the site
time zone, ISO 8601 with offset, as the API renders them); prices are in baht.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, QuerySet
from django.utils import timezone

from events.pricing import satangs_to_decimal_string

from ..models import Order, Ticket

CHUNK_ROWS = 2000

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


def _lines(header: tuple[str, ...], rows) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([_cell(value) for value in row])


def tickets_csv(tickets: QuerySet[Ticket]) -> Iterator[str]:
    """The tickets as CSV lines (header first), in id order; one query, streamed."""
    fields = [field for _, field in TICKET_COLUMNS]
    price = fields.index("ticket_type__price")
    rows = tickets.order_by("id").values_list(*fields).iterator(chunk_size=CHUNK_ROWS)

    def with_baht(rows):
        for row in rows:
            row = list(row)
            row[price] = satangs_to_decimal_string(row[price])
            yield row

    return _lines(tuple(name for name, _ in TICKET_COLUMNS), with_baht(rows))


def orders_csv(orders: QuerySet[Order]) -> Iterator[str]:
    """The orders as CSV lines (header first) with their ticket counts, in id order; one
    query, streamed."""
    rows = (
        orders.annotate(ticket_count=Count("tickets"))
        .order_by("id")
        .values_list(*(field for _, field in ORDER_COLUMNS))
        .iterator(chunk_size=CHUNK_ROWS)
    )
    return _lines(tuple(name for name, _ in ORDER_COLUMNS), rows)

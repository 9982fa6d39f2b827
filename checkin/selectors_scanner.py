"""The scanner apps' reads: the sync feed of an event's tickets (CONTRACT §11).

Every change of a ticket gives it a new feed position, set by database triggers (migration
0005; 0011 counts a change of its order's payment state as one): `change_seq`, from a
sequence, and on PostgreSQL `change_xid`, the id of the transaction that wrote it. The feed
returns tickets in (change_xid, change_seq) order after the client's cursor, and the cursor is
that position, signed and bound to the event.

Why positions alone would miss changes: numbers are taken when a transaction writes, but rows
become visible when it commits. A transaction that took seq 10 and commits after a reader has
seen seq 11 would sit behind the reader's cursor forever. So on PostgreSQL a page only returns
rows written by transactions older than the *horizon*: the oldest transaction still running
when the page is read (or, if none, the next transaction id). Every transaction below the
horizon has finished, so its rows are visible to the page's query (taken after the horizon);
every transaction that commits later has an id at or above the horizon, so its rows sort after
any cursor the page hands out. When a page reaches the horizon, the cursor moves to it, so an
empty delta is one index probe. Transactions of other databases of the cluster never touch
these rows and are left out; one running for long in this database holds the feed back (late,
never lost). SQLite has one writer at a time, which commits its numbers before the next takes
any: there the counter alone is the order, and there is no horizon.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core import signing

from events.signing_keys import signing_keys_published
from ticketing.api.exceptions import InvalidParameters
from tickets.models import Order, Ticket

from .models import TicketCheckIn
from .statements import horizon, tickets_changed

SYNC_LIMIT_MAX = 1000
SYNC_LIMIT_DEFAULT = 500
_CURSOR_SALT = "tickets.sync.cursor"


@dataclass(frozen=True, order=True)
class FeedPosition:
    """Where a client is in an event's feed: after every ticket at or before this position."""

    xid: int = 0
    seq: int = 0


@dataclass(slots=True)
class ScannerTicketRow:
    """What `ScannerTicketSerializer` reads: a ticket as a scanner keeps it."""

    id: int
    reference_code: str
    nfc_uid: str | None
    status: str
    order_paid: bool
    ticket_type_id: int
    ticket_type_name: str
    firstname: str
    lastname: str
    used_at: datetime | None
    updated_at: datetime
    checked_in_type_ids: list[int]

    @classmethod
    def of(
        cls, ticket: Ticket, checked_in_type_ids: list[int], *, order_paid: bool
    ) -> ScannerTicketRow:
        """From a ticket loaded with its ticket type."""
        return cls(
            ticket.id,
            ticket.reference_code,
            ticket.nfc_uid,
            ticket.status,
            order_paid,
            ticket.ticket_type_id,
            ticket.ticket_type.name,
            ticket.firstname,
            ticket.lastname,
            ticket.used_at,
            ticket.updated_at,
            checked_in_type_ids,
        )


@dataclass(frozen=True)
class FeedPage:
    tickets: list[ScannerTicketRow]
    next_cursor: str
    has_more: bool
    keys: list[dict]  # the event's signing keys in use (CONTRACT §11, §14)


def sync_cursor_dump(*, event_id: int, position: FeedPosition) -> str:
    """An opaque cursor: the position, signed and bound to the event."""
    return signing.Signer(salt=_CURSOR_SALT).sign(f"{event_id}.{position.xid}.{position.seq}")


def sync_cursor_load(*, event_id: int, cursor: str) -> FeedPosition:
    """The position a cursor of this event holds.

    Raises: InvalidParameters (not issued by the service, tampered with, or of another event).
    """
    try:
        value = signing.Signer(salt=_CURSOR_SALT).unsign(cursor)
        cursor_event, xid, seq = (int(part) for part in value.split("."))
    except (signing.BadSignature, ValueError):
        cursor_event = None
    if cursor_event != event_id:
        message = "Not a cursor this service issued for this event."
        raise InvalidParameters(message, fields={"cursor": [message]})
    return FeedPosition(xid, seq)


def event_tickets_sync(*, event_id: int, after: FeedPosition, limit: int) -> FeedPage:
    """The event's tickets changed after `after`, in change order, at most `limit`.

    Four statements: the horizon (PostgreSQL), the page (with each ticket's type and order),
    the page's check-in types, and the event's signing keys.
    """
    below = horizon()  # before the page: its rows below the horizon are then all visible
    rows = tickets_changed(
        event_id=event_id, xid=after.xid, seq=after.seq, below=below, limit=limit
    )
    types: dict[int, list[int]] = {}
    if rows:
        check_ins = (
            TicketCheckIn.objects.filter(ticket_id__in=[row["id"] for row in rows])
            .order_by("check_in_type_id")
            .values_list("ticket_id", "check_in_type_id")
        )
        for ticket_id, type_id in check_ins:
            types.setdefault(ticket_id, []).append(type_id)
    tickets = [_scanner_row(row, types.get(row["id"], [])) for row in rows]
    has_more = len(rows) == limit
    position = FeedPosition(rows[-1]["change_xid"], rows[-1]["change_seq"]) if rows else after
    if not has_more and below is not None:
        # Everything below the horizon has been returned; nothing can still arrive there.
        position = max(position, FeedPosition(below, 0))
    return FeedPage(
        tickets=tickets,
        next_cursor=sync_cursor_dump(event_id=event_id, position=position),
        has_more=has_more,
        keys=signing_keys_published(event_id=event_id),
    )


def _scanner_row(row: dict, checked_in_type_ids: list[int]) -> ScannerTicketRow:
    return ScannerTicketRow(
        id=row["id"],
        reference_code=row["reference_code"],
        nfc_uid=row["nfc_uid"],
        status=row["status"],
        order_paid=row["order__status"] == Order.Status.PAID,
        ticket_type_id=row["ticket_type_id"],
        ticket_type_name=row["ticket_type__name"],
        firstname=row["firstname"],
        lastname=row["lastname"],
        used_at=row["used_at"],
        updated_at=row["updated_at"],
        checked_in_type_ids=checked_in_type_ids,
    )


def scanner_ticket_check_ins(ticket: Ticket, *, multiple: bool) -> list[int]:
    """The check-in types the ticket is checked in for now; none without check-in types."""
    if not multiple:
        return []
    return list(
        TicketCheckIn.objects.filter(ticket_id=ticket.pk)
        .order_by("check_in_type_id")
        .values_list("check_in_type_id", flat=True)
    )

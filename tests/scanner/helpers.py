"""Helpers of the scanner tests: URLs, following the sync feed, the feed's view of the database."""

from checkin.models import TicketCheckIn
from tickets.models import Order, Ticket


def event_url(event) -> str:
    return f"/api/public/organizers/{event.organizer_id}/events/{event.id}"


def sync_url(event) -> str:
    return f"{event_url(event)}/tickets/sync"


def batch_url(event) -> str:
    return f"{event_url(event)}/checkins"


def stats_url(event) -> str:
    return f"{event_url(event)}/check_in_stats"


def sync_page(client, event, cursor: str | None = None, limit: int | None = None) -> dict:
    params = {k: v for k, v in {"cursor": cursor, "limit": limit}.items() if v is not None}
    response = client.get(sync_url(event), params)
    assert response.status_code == 200, response.json()
    return response.json()


def follow(client, event, copy: dict, cursor: str | None = None, limit: int = 3) -> str:
    """Follow the feed until `has_more` is false, applying every record to `copy` (id → record);
    the last cursor."""
    while True:
        page = sync_page(client, event, cursor, limit)
        for record in page["tickets"]:
            copy[record["id"]] = record
        cursor = page["next_cursor"]
        if not page["has_more"]:
            return cursor


def scanner_view(event) -> dict:
    """What a scanner's copy of the event must equal: every ticket's state, as the feed shows it."""
    types: dict[int, list[int]] = {}
    for ticket_id, type_id in (
        TicketCheckIn.objects.filter(ticket__event=event)
        .order_by("check_in_type_id")
        .values_list("ticket_id", "check_in_type_id")
    ):
        types.setdefault(ticket_id, []).append(type_id)
    return {
        t.id: (
            t.status,
            t.order.status == Order.Status.PAID,
            t.firstname or None,
            t.nfc_uid,
            t.ticket_type.name,
            types.get(t.id, []),
        )
        for t in Ticket.objects.filter(event=event).select_related("order", "ticket_type")
    }


def copy_view(copy: dict) -> dict:
    """The same fields of a scanner's copy."""
    return {
        r["id"]: (
            r["status"],
            r["order_paid"],
            r["firstname"],
            r["nfc_uid"],
            r["ticket_type_name"],
            r["checked_in_type_ids"],
        )
        for r in copy.values()
    }

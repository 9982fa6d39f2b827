"""The attendee's ticket page (CONTRACT §14): its address, and revoking that address."""

from __future__ import annotations

from django.utils import timezone

from events.signing_keys import active_key_annotations

from ..codes import page_token_generate
from ..links import ticket_page_url  # noqa: F401 (the admin imports it from here)
from ..models import Ticket


def ticket_page_token_regenerate(*, ticket: Ticket) -> Ticket:
    """Give the ticket a new page address: the old link (in an email, a screenshot) is a 404.

    One UPDATE of the row, so nothing else of the ticket is overwritten; `updated_at` moves
    because the Ticket object's `ticket_url` changed (feeds by `updated_at` see it). Two
    192-bit tokens do not collide; the unique constraint is the backstop.
    """
    token, now = page_token_generate(), timezone.now()
    Ticket.objects.filter(pk=ticket.pk).update(page_token=token, updated_at=now)
    ticket.page_token, ticket.updated_at = token, now
    return ticket


def ticket_for_page(*, token: str) -> Ticket | None:
    """The ticket whose page this is, with what the page shows; None for no such token.

    One query on the token's unique index, with the event, its organizer and the ticket type joined,
    and the event's active signing key, so the QR code's signed code costs no query (§14).
    """
    queryset = (
        Ticket.objects.select_related("event__organizer", "ticket_type")
        .annotate(**active_key_annotations())
        .filter(page_token=token)
    )
    return next(iter(queryset[:1]), None)

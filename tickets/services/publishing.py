"""The webhook events of the ticket services (CONTRACT §13), recorded in their transactions.

Each service that changes a ticket or an order calls one of these inside its transaction, so the
event commits or rolls back with the change. The payload's `data` is the API's own Ticket or
Order representation, built only when some endpoint wants the event; neither needs a request
(`ticket_url` is built from `SITE_URL`), so a payload is the same whichever interface made the
change.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhooks.models import WebhookEvent
from webhooks.services import webhook_event_record, webhook_wants

from ..models import Order, Ticket
from ..selectors import orders_for_output, tickets_for_output
from ..serializers import OrderSerializer, TicketSerializer

Type = WebhookEvent.Type


def ticket_event_record(*, organizer_id: int, ticket: Ticket, type: Type) -> None:
    """Record `type` for a ticket ready for `TicketSerializer` (its type and form answers)."""
    webhook_event_record(
        organizer_id=organizer_id,
        event_id=ticket.event_id,
        type=type,
        data=lambda: {"ticket": TicketSerializer().to_representation(ticket)},
    )


def order_cancelled_record(*, organizer_id: int, order: Order, revoked: Iterable[Ticket]) -> None:
    """Record `order.cancelled`, then `ticket.revoked` for each ticket the cancellation revoked."""
    webhook_event_record(
        organizer_id=organizer_id,
        event_id=order.event_id,
        type=Type.ORDER_CANCELLED,
        data=lambda: {
            "order": OrderSerializer().to_representation(
                orders_for_output(Order.objects.filter(pk=order.pk)).get()
            )
        },
    )
    revoked_ids = [ticket.pk for ticket in revoked]
    if not revoked_ids or not webhook_wants(organizer_id=organizer_id, type=Type.TICKET_REVOKED):
        return
    tickets = list(tickets_for_output(Ticket.objects.filter(pk__in=revoked_ids)).order_by("pk"))
    for ticket in tickets:
        ticket_event_record(organizer_id=organizer_id, ticket=ticket, type=Type.TICKET_REVOKED)

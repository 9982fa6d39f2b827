"""The webhook events of the ticket services (CONTRACT §13), recorded in their transactions.

Each service that changes a ticket or an order calls one of these inside its transaction, so the
event commits or rolls back with the change. The payload's `data` is the API's own Ticket or
Order representation, built only when some endpoint wants the event; neither needs a request
(`ticket_url` is built from `SITE_URL`), so a payload is the same whichever interface made the
change. The one-statement paths (the gate's admission, the API's creation) cannot build it in
the request: the statement records the event with the ticket's row as it left it, and the
event's dispatch renders the same representation from that row (`ticket_row_render`, the
renderer of the `ticket.*` types).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS, models
from django_tasks import task

from events.models import TicketType
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_wants
from webhooks.services import webhook_event_record, webhook_events_record

from ..models import Order, Ticket
from ..selectors import orders_for_output, tickets_for_output, with_form_answers_of
from ..serializers import OrderSerializer, TicketSerializer
from ..statements.issue import ticket_event_sql

Type = WebhookEvent.Type


def ticket_event_record(*, organizer_id: int, ticket: Ticket, type: Type) -> None:
    """Record `type` for a ticket ready for `TicketSerializer` (its type and form answers)."""
    webhook_event_record(
        organizer_id=organizer_id,
        event_id=ticket.event_id,
        type=type,
        data=lambda: {"ticket": TicketSerializer.represent(ticket)},
    )


def tickets_event_record(
    *, organizer_id: int, event_id: int, tickets: list[Ticket], type: Type
) -> None:
    """`ticket_event_record` for tickets of one event changed at once (an import's batch): the
    subscriptions asked once, the events written together."""
    webhook_events_record(
        organizer_id=organizer_id,
        event_id=event_id,
        type=type,
        datas=({"ticket": TicketSerializer.represent(ticket)} for ticket in tickets),
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


# --- Events recorded by a statement: the gate's admission, the API's creation ---------------


def ticket_checked_in_sql(*, admitted: str) -> str:
    """The clause of the gate's admission that records `ticket.checked_in` for the ticket its
    `admitted` query yields (`statements.issue.ticket_event_sql`)."""
    return ticket_event_sql(ticket=admitted, type=Type.TICKET_CHECKED_IN)


def ticket_row_render(events: list[WebhookEvent]) -> dict[str, dict]:
    """The data of events a statement recorded: the API's Ticket as that statement left it
    (`source`: the rows of the ticket and its type), for all of them in one pass. The form
    answers are read now: neither an admission nor a creation writes them. The renderer of the
    `ticket.*` types (`webhooks.renderers`, registered by `TicketsConfig.ready()`)."""
    tickets = {event.pk: _ticket_from(event.source) for event in events}
    for ticket in tickets.values():
        ticket.has_answers = True  # not in the row: ask, for all of them in one query
    with_form_answers_of(list(tickets.values()))
    serializer = TicketSerializer()
    return {pk: {"ticket": serializer.to_representation(t)} for pk, t in tickets.items()}


@task(queue_name="webhooks")
def ticket_checked_in_publish(
    webhook_event_id: str, admitted: dict, envelope: dict | None = None
) -> None:
    """A `ticket.checked_in` queued as a task by a gate before the outbox (a deploy in
    progress): recorded in the outbox as the statement now records it."""
    if envelope is None:  # its event's row was written by that statement: render it there
        WebhookEvent.objects.filter(pk=webhook_event_id, payload__data=None).update(
            source=admitted, dispatched_at=None
        )
        return
    created_at = datetime.fromisoformat(envelope["created_at"])
    WebhookEvent.objects.bulk_create(
        [
            WebhookEvent(
                id=webhook_event_id,
                organizer_id=envelope["organizer_id"],
                type=envelope["type"],
                payload=envelope,
                created_at=created_at,
                source=admitted,
            )
        ],
        ignore_conflicts=True,
    )


def _ticket_from(admitted: dict) -> Ticket:
    ticket = _instance_from(Ticket, admitted["ticket"])
    ticket.ticket_type = _instance_from(TicketType, admitted["ticket_type"])
    return ticket


def _instance_from(model: type[models.Model], row: dict) -> models.Model:
    """The instance a query would load, from its row as `to_jsonb` wrote it: each field parses
    its JSON value (a timestamp's text, for one)."""
    fields = model._meta.concrete_fields
    # A field added since the row was written (a deploy between the check-in and its dispatch)
    # takes its default: the event must still go out.
    values = [f.to_python(row.get(f.column, f.get_default())) for f in fields]
    return model.from_db(DEFAULT_DB_ALIAS, [f.attname for f in fields], values)

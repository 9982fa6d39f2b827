"""Revoking tickets and cancelling orders: the ticket is void and its place is free again."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable

from django.utils import timezone

from events.models import Event
from events.services import ticket_type_release_places
from ticketing.api.exceptions import InvalidParameters, NotFound
from ticketing.db import atomic_retrying_once

from ..codes import reference_code_normalize
from ..exceptions import TicketAlreadyUsed, TicketRevoked
from ..models import Order, Ticket
from ..selectors import with_form_answers
from .common import Actor, iso, ticket_lock
from .publishing import Type, order_cancelled_record, ticket_event_record

# One logger for every ticket service, as operators know it.
logger = logging.getLogger(__package__)


def tickets_revoke_locked(*, tickets: Iterable[Ticket], note: str | None) -> None:
    """Revoke tickets the caller has locked and checked, and free their places.

    Counters go down in ticket type id order, so two cancellations cannot deadlock.
    Locks: the ticket type rows until commit.
    """
    freed: Counter[int] = Counter()
    freed_api: Counter[int] = Counter()
    for ticket in tickets:
        ticket.status = Ticket.Status.REVOKED
        ticket.revoke_note = note or ticket.revoke_note
        ticket.save(update_fields=["status", "revoke_note", "updated_at"])
        freed[ticket.ticket_type_id] += 1
        if ticket.issued_via_api:
            freed_api[ticket.ticket_type_id] += 1
    for ticket_type_id in sorted(freed):
        ticket_type_release_places(
            ticket_type_id=ticket_type_id,
            count=freed[ticket_type_id],
            api_count=freed_api[ticket_type_id],
        )


@atomic_retrying_once
def ticket_revoke(
    *,
    event: Event,
    ticket_id: int | None = None,
    reference_code: str | None = None,
    reason: str = "",
    actor: Actor,
) -> Ticket:
    """Revoke (invalidate) a ticket of the event, found by id or reference code, freeing its place.

    `reason` becomes `revoke_note` (null when empty). Revoked is final; a used ticket must be
    renewed first. Records `ticket.revoked` in the same transaction.

    Raises: InvalidParameters (neither id nor code), NotFound, TicketRevoked, TicketAlreadyUsed.
    Locks: the ticket row, then its ticket type row, until commit.
    """
    filters: dict[str, object] = {}
    if ticket_id is not None:
        filters["pk"] = ticket_id
    if reference_code is not None:
        filters["reference_code"] = reference_code_normalize(reference_code)
    if not filters:
        raise InvalidParameters(
            "Send ticket_id or reference_code.",
            fields={"ticket_id": ["Send ticket_id or reference_code."]},
        )
    ticket = ticket_lock(event=event, **filters)
    if ticket.status == Ticket.Status.REVOKED:
        raise TicketRevoked(f"Ticket {ticket.reference_code} is already revoked.", ticket=ticket)
    if ticket.status == Ticket.Status.USED:
        raise TicketAlreadyUsed(
            f"Ticket {ticket.reference_code} was checked in at {iso(ticket.used_at)}; "
            "renew it before revoking.",
            ticket=ticket,
        )
    tickets_revoke_locked(tickets=[ticket], note=reason.strip() or None)
    ticket_event_record(organizer_id=event.organizer_id, ticket=ticket, type=Type.TICKET_REVOKED)
    logger.info(
        "ticket %s revoked by user=%s application=%s",
        ticket.pk,
        getattr(actor.user, "pk", None),
        getattr(actor.application, "pk", None),
    )
    return ticket


@atomic_retrying_once
def order_cancel(*, order_id: int, actor: Actor) -> Order:
    """Cancel an order: its tickets are revoked and their places freed (CONTRACT §8).

    Cancelling a cancelled order changes nothing and returns it. A used ticket must be renewed
    first (as for revoking it alone), and then nothing is changed. Records `order.cancelled`,
    then `ticket.revoked` for each ticket it revoked, in the same transaction.

    Raises: NotFound, TicketAlreadyUsed (with that ticket).
    Locks: the order row, then its tickets in id order, then their ticket types in id order.
    """
    order = (
        Order.objects.select_for_update(of=("self",))
        .select_related("event")
        .filter(pk=order_id)
        .first()
    )
    if order is None:
        raise NotFound("Order not found.")
    if order.status == Order.Status.CANCELLED:
        return order
    tickets = list(
        Ticket.objects.select_for_update(of=("self",))
        .select_related("ticket_type")
        .filter(order=order)
        .order_by("pk")
    )
    used = next((t for t in tickets if t.status == Ticket.Status.USED), None)
    if used is not None:
        raise TicketAlreadyUsed(
            f"Ticket {used.reference_code} of this order is checked in; renew it before "
            "cancelling the order.",
            ticket=with_form_answers(used),
        )
    revoked = [t for t in tickets if t.status != Ticket.Status.REVOKED]
    tickets_revoke_locked(tickets=revoked, note=f"Order #{order.pk} cancelled.")
    order.status = Order.Status.CANCELLED
    order.cancelled_at = timezone.now()
    order.save(update_fields=["status", "cancelled_at", "updated_at"])
    order_cancelled_record(organizer_id=order.event.organizer_id, order=order, revoked=revoked)
    logger.info(
        "order %s cancelled by user=%s application=%s",
        order.pk,
        getattr(actor.user, "pk", None),
        getattr(actor.application, "pk", None),
    )
    return order

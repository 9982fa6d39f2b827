"""Order writes. Cancelling an order revokes its tickets through the ticket services' internals."""

import logging

from django.utils import timezone

from ticketing.api.exceptions import NotFound
from tickets.exceptions import TicketAlreadyUsed
from tickets.models import Ticket
from tickets.services import Actor, atomic_retrying_once, tickets_revoke_locked, with_form_answers

from .models import Order

logger = logging.getLogger(__name__)


@atomic_retrying_once
def order_cancel(*, order_id: int, actor: Actor) -> Order:
    """Cancel an order: its tickets are revoked and their places freed (CONTRACT §8).

    Cancelling a cancelled order changes nothing and returns it. A used ticket must be renewed
    first (as for revoking it alone), and then nothing is changed.

    Raises: NotFound, TicketAlreadyUsed (with that ticket).
    Locks: the order row, then its tickets in id order, then their ticket types in id order.
    """
    order = Order.objects.select_for_update(of=("self",)).filter(pk=order_id).first()
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
    tickets_revoke_locked(
        tickets=[t for t in tickets if t.status != Ticket.Status.REVOKED],
        note=f"Order #{order.pk} cancelled.",
    )
    order.status = Order.Status.CANCELLED
    order.cancelled_at = timezone.now()
    order.save(update_fields=["status", "cancelled_at", "updated_at"])
    logger.info(
        "order %s cancelled by user=%s application=%s",
        order.pk,
        getattr(actor.user, "pk", None),
        getattr(actor.application, "pk", None),
    )
    return order

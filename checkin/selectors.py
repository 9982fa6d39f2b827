"""Reads of the gate: what a check-in or a renew needs to know of a ticket."""

from django.db.models import Exists, OuterRef, Subquery

from events.models import CheckInType
from tickets.models import Ticket

from .models import TicketCheckIn


def check_in_types_for_ticket(ticket: Ticket) -> dict[int, CheckInType]:
    """The event's check-in types by id, each annotated with whether this ticket may use it
    (`restricted`, `valid_for_ticket`) and when it was admitted there (`admitted_at`, None if
    not). One query; events have a handful."""
    through = CheckInType.ticket_types.through
    return {
        t.pk: t
        for t in CheckInType.objects.filter(event_id=ticket.event_id).annotate(
            restricted=Exists(through.objects.filter(checkintype_id=OuterRef("pk"))),
            valid_for_ticket=Exists(
                through.objects.filter(
                    checkintype_id=OuterRef("pk"), tickettype_id=ticket.ticket_type_id
                )
            ),
            admitted_at=Subquery(
                TicketCheckIn.objects.filter(
                    ticket_id=ticket.pk, check_in_type_id=OuterRef("pk")
                ).values("used_at")[:1]
            ),
        )
    }

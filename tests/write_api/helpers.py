"""Helpers of the write API tests: URLs, a client per token, and a snapshot of everything a
gate or creation request may change."""

from checkin.models import CheckInLog, TicketCheckIn
from events.models import TicketType
from tests.support import TokenClient
from tickets.models import Order, Ticket


def event_url(event) -> str:
    return f"/api/public/organizers/{event.organizer_id}/events/{event.id}"


def tickets_url(event) -> str:
    return f"{event_url(event)}/tickets"


def checkin_url(ticket) -> str:
    return f"{tickets_url(ticket.event)}/{ticket.id}/checkin"


def renew_url(ticket) -> str:
    return f"{tickets_url(ticket.event)}/{ticket.id}/renew"


def invalidate_url(event) -> str:
    return f"{tickets_url(event)}/invalidate"


def db_state(event) -> dict:
    """Every row a gate or creation request could touch, to prove a rejection changed nothing."""
    return {
        "tickets": list(Ticket.objects.filter(event=event).order_by("pk").values()),
        "orders": list(Order.objects.filter(event=event).order_by("pk").values()),
        "counters": list(
            TicketType.objects.filter(event=event)
            .order_by("pk")
            .values("pk", "sold_count", "api_sold_count")
        ),
        "type_check_ins": list(
            TicketCheckIn.objects.filter(ticket__event=event).order_by("pk").values()
        ),
        "logs": list(CheckInLog.objects.filter(ticket__event=event).order_by("pk").values()),
    }


def client_for(token: str) -> TokenClient:
    return TokenClient(token)

"""Domain errors of tickets, with the contract's codes (CONTRACT §2).

A check-in, renew or invalidate rejection carries the ticket as it stands (`exc.ticket`, the
instance the service decided on), so a gate can show who it is and when it was used. It is
rendered only when the body is built (the exception handler reads `extra`); callers that are
not HTTP (the admin, a batch upload) never pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ticketing.api.exceptions import Conflict, Unprocessable

if TYPE_CHECKING:
    from .models import Ticket


def ticket_body(ticket: Ticket) -> dict[str, Any]:
    """The ticket as `TicketSerializer` renders it; needs no request (tickets have no images)."""
    from .serializers import TicketSerializer

    return TicketSerializer.represent(ticket)


class CarriesTicket:
    """Mixin of an error that shows the ticket: `ticket=` is required; the body shows it
    (`extra["ticket"]`)."""

    def __init__(self, message: str | None = None, *, ticket: Ticket, **extra: Any):
        self.ticket = ticket
        super().__init__(message, **extra)

    @property
    def extra(self) -> dict[str, Any]:
        """The body's extra fields, the ticket rendered now: the service raised with the
        ticket as it decided, and nothing changes it on the way to the handler."""
        return {**self._extra, "ticket": ticket_body(self.ticket)}

    @extra.setter
    def extra(self, value: dict[str, Any]) -> None:
        self._extra = value


class QuotaExceeded(Unprocessable):
    code = "quota_exceeded"
    default_message = "This ticket type has no places left."


class EventNotActive(Unprocessable):
    code = "event_not_active"
    default_message = "The event is not active."


class TicketRevoked(CarriesTicket, Unprocessable):
    code = "ticket_revoked"
    default_message = "This ticket has been revoked."


class TicketAlreadyUsed(CarriesTicket, Unprocessable):
    code = "ticket_already_used"
    default_message = "This ticket has already been checked in."


class DuplicateExternalId(Conflict):
    code = "duplicate_external_id"
    default_message = "Another ticket of this event has this external_id."


class DuplicateReferenceCode(Conflict):
    code = "duplicate_reference_code"
    default_message = "Another ticket of this event has this reference code."

"""The gate's refusals, with the contract's codes (CONTRACT §2, §7): each carries the ticket as
the gate decided on it (`tickets.exceptions.CarriesTicket`), which the body shows. Those a ticket
can meet off the gate too (revoked, already used) are `tickets.exceptions`'.
"""

from __future__ import annotations

from ticketing.api.exceptions import Conflict, Unprocessable
from tickets.exceptions import CarriesTicket, EventNotActive


class EventNotActiveForTicket(CarriesTicket, EventNotActive):
    """The same rejection at a gate, where the body shows the ticket."""


class OrderNotPaid(CarriesTicket, Unprocessable):
    code = "order_not_paid"
    default_message = "The order of this ticket is not paid."


class TicketNotUsed(CarriesTicket, Unprocessable):
    code = "ticket_not_used"
    default_message = "This ticket has not been checked in."


class CheckInTypeRequired(CarriesTicket, Unprocessable):
    code = "check_in_type_required"
    default_message = "This event has check-in types: send check_in_type_ids."


class DuplicateNfcUid(CarriesTicket, Conflict):
    code = "duplicate_nfc_uid"
    default_message = "Another ticket of this event is bound to this NFC tag."

"""Domain errors of orders. Cancelling reuses the ticket errors (a used ticket blocks it)."""

from tickets.exceptions import OrderNotPaid, TicketAlreadyUsed

__all__ = ["OrderNotPaid", "TicketAlreadyUsed"]

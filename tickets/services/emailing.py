"""The holder's ticket email, asked for again: queued in the email outbox (`email_outbox`),
which a worker hands to the task that sends it."""

from ticketing.api.exceptions import InvalidParameters

from ..email_outbox import ticket_emails_queue
from ..exceptions import TicketRevoked
from ..models import Ticket


def ticket_send_email(*, ticket: Ticket) -> None:
    """Ask for the holder's ticket email, in the current transaction if there is one.

    A worker sends it (`email_outbox`, `tickets.tasks`), retrying while the mail server fails;
    a failure to send never undoes the ticket.
    """
    ticket_emails_queue([ticket])


def ticket_email_resend(*, ticket: Ticket) -> None:
    """Send the holder their ticket again (a task; see `ticket_send_email`).

    Raises: TicketRevoked (a revoked ticket admits no one), InvalidParameters (no email).
    """
    if ticket.status == Ticket.Status.REVOKED:
        raise TicketRevoked(
            f"Ticket {ticket.reference_code} is revoked; it is not sent.", ticket=ticket
        )
    if not ticket.email:
        raise InvalidParameters(
            f"Ticket {ticket.reference_code} has no holder email address.",
            fields={"email": ["The holder has no email address."]},
        )
    ticket_send_email(ticket=ticket)

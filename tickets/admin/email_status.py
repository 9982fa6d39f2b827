"""The ticket email's delivery, as the admin's ticket page shows it to support staff."""

from django.utils import formats, timezone
from django.utils.html import format_html

from ..email_status import TicketEmail
from ..models import Ticket


def email_delivery(ticket: Ticket) -> str:
    """What Django's mail backend answered for the latest attempt, with when and to whom."""
    try:
        record = ticket.email_status  # selected with the ticket (`TicketAdmin.get_queryset`)
    except TicketEmail.DoesNotExist:
        record = None
    if record is None:
        return "Not sent yet" if ticket.email else "No email address: nothing to send"
    when = formats.localize(timezone.localtime(record.at))
    if record.status == TicketEmail.Status.QUEUED:
        return format_html("<strong>Queued</strong> for {} on {}", record.recipient, when)
    if record.status == TicketEmail.Status.SENT:
        return format_html(
            "<strong>Sent</strong> to {} on {} (attempt {})",
            record.recipient,
            when,
            record.attempts,
        )
    return format_html(
        "<strong>{}</strong>: to {} on {} (attempt {}): {}",
        record.get_status_display(),
        record.recipient,
        when,
        record.attempts,
        record.error,
    )

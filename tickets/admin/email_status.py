"""The ticket email's delivery, as the admin's ticket page shows it to support staff."""

from django.utils.html import format_html
from django.utils.translation import gettext as _

from ticketing.dates import admin_date

from ..email_status import TicketEmail
from ..models import Ticket


def email_delivery(ticket: Ticket) -> str:
    """What Django's mail backend answered for the latest attempt, with when and to whom."""
    try:
        record = ticket.email_status  # selected with the ticket (`TicketAdmin.get_queryset`)
    except TicketEmail.DoesNotExist:
        record = None
    if record is None:
        return _("Not sent yet") if ticket.email else _("No email address: nothing to send")
    when = admin_date(record.at)
    if record.status == TicketEmail.Status.QUEUED:
        return format_html(
            _("<strong>Queued</strong> for {recipient} on {when}"),
            recipient=record.recipient,
            when=when,
        )
    if record.status == TicketEmail.Status.SENT:
        return format_html(
            _("<strong>Sent</strong> to {recipient} on {when} (attempt {attempts})"),
            recipient=record.recipient,
            when=when,
            attempts=record.attempts,
        )
    return format_html(
        _("<strong>{status}</strong>: to {recipient} on {when} (attempt {attempts}): {error}"),
        status=record.get_status_display(),
        recipient=record.recipient,
        when=when,
        attempts=record.attempts,
        error=record.error,
    )

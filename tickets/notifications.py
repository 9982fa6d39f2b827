"""The holder's ticket email: text and HTML, through Django's email framework.

Run by the task `tickets.tasks.ticket_email_send` with an id, so it reads the committed ticket;
the task is enqueued in the issuing transaction and never runs for a creation that rolled back.
"""

import logging

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import timezone

from .models import Ticket

logger = logging.getLogger(__name__)


def ticket_email_send(*, ticket_id: int) -> None:
    """Send the ticket to its holder. A ticket gone or without email is skipped, not an error."""
    ticket = Ticket.objects.select_related("event", "ticket_type").filter(pk=ticket_id).first()
    if ticket is None or not ticket.email:
        logger.warning("ticket email skipped: ticket %s missing or without email", ticket_id)
        return
    event = ticket.event
    context = {
        "ticket": ticket,
        "event": event,
        "holder_name": ticket.holder_name,
        "reference_code": ticket.reference_code,
        "ticket_type_name": ticket.ticket_type.name,
        "start_at": timezone.localtime(event.start_at),
        "end_at": timezone.localtime(event.end_at),
        "place": event.display_location_name,
        "time_zone": timezone.get_current_timezone_name(),
    }
    subject = render_to_string("tickets/email/ticket_subject.txt", context).strip()
    message = EmailMultiAlternatives(
        subject=" ".join(subject.split()),  # a header must be one line
        body=render_to_string("tickets/email/ticket.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[ticket.email],
    )
    message.attach_alternative(render_to_string("tickets/email/ticket.html", context), "text/html")
    message.send()
    logger.info("ticket email sent for ticket %s", ticket_id)

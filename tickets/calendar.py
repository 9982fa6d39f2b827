"""The ticket's calendar entry: an iCalendar (RFC 5545) file of the event, for the email.

Times are written in UTC (`DTSTART:20261224T120000Z`): every calendar reads them the same way
without a VTIMEZONE block, and shows them in its owner's zone. The UID names the ticket, so a
resent email updates the entry instead of adding a second one.
"""

from datetime import UTC
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone
from icalendar import Calendar, Event

from .links import ticket_page_url
from .models import Ticket


def ticket_calendar_uid(ticket: Ticket) -> str:
    return f"ticket-{ticket.pk}@{urlsplit(settings.SITE_URL).hostname or 'localhost'}"


def ticket_ics(ticket: Ticket) -> bytes:
    """The event as one VEVENT; needs `ticket.event` and `ticket.ticket_type` loaded."""
    event = ticket.event
    calendar = Calendar()
    calendar.add("prodid", "-//Event ticketing//Ticket//EN")
    calendar.add("version", "2.0")
    calendar.add("method", "PUBLISH")
    entry = Event()
    entry.add("uid", ticket_calendar_uid(ticket))
    entry.add("dtstamp", timezone.now().astimezone(UTC))
    entry.add("dtstart", event.start_at.astimezone(UTC))
    entry.add("dtend", event.end_at.astimezone(UTC))
    entry.add("summary", event.title)
    if event.display_location_name:
        entry.add("location", event.display_location_name)
    url = ticket_page_url(ticket)
    entry.add("url", url)
    entry.add(
        "description",
        f"{ticket.ticket_type.name} · {ticket.reference_code}\n{url}",
    )
    calendar.add_component(entry)
    return calendar.to_ical()

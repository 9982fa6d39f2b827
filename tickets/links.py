"""The ticket page's addresses (CONTRACT §14), below services: the serializers, the email and
the calendar file all print them."""

from __future__ import annotations

from django.conf import settings

from .models import Ticket

TICKET_PAGE_PATH = "/t/"


def ticket_page_path(ticket: Ticket) -> str:
    """The page's path; the root URLconf mounts the page views under `TICKET_PAGE_PATH`."""
    return f"{TICKET_PAGE_PATH}{ticket.page_token}"


def ticket_page_url(ticket: Ticket) -> str:
    """The page's absolute address, on `SITE_URL`, so it is the same whoever asks and from where.

    Built by concatenation rather than `reverse()`: every Ticket the API returns carries it,
    including the gate's answers, where the URL resolver's cost would show.
    """
    return f"{settings.SITE_URL}{TICKET_PAGE_PATH}{ticket.page_token}"

"""Fixtures of the hostile-input tests; the assertion every case shares is in
`tests.hostile.helpers`."""

import pytest

from checkin.models import CheckInLog
from tests.factories import TicketFactory
from tickets.models import Ticket


@pytest.fixture
def ticket(event, ticket_type):
    return TicketFactory(
        event=event, ticket_type=ticket_type, reference_code="HOSTILE01", nfc_uid=None
    )


@pytest.fixture
def event_path(event) -> str:
    return f"/api/public/organizers/{event.organizer_id}/events/{event.id}"


@pytest.fixture
def unchanged(event):
    """Snapshot of the event's tickets and audit rows; call it again to compare."""

    def snapshot():
        return (
            list(Ticket.objects.filter(event=event).order_by("pk").values()),
            list(CheckInLog.objects.filter(ticket__event=event).order_by("pk").values()),
        )

    return snapshot

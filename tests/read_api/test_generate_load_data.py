"""`manage.py generate_load_data`: a large event whose data obeys the same rules as real data."""

import io
import re

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count, Q

from events.models import Event, TicketType
from tests.factories import OrganizerFactory
from tickets.models import Order, Ticket

pytestmark = pytest.mark.django_db


def _generate(**options) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("generate_load_data", stdout=out, stderr=err, **options)
    return int(out.getvalue().strip()), err.getvalue()


def test_generates_an_event_with_counters_that_match(app_client, organizer):
    event_id, progress = _generate(
        tickets=250,
        organizer=organizer.id,
        ticket_types=3,
        tickets_per_order=4,
        seed=7,
        check_in_types=2,
    )

    event = Event.objects.get(id=event_id)
    assert event.organizer_id == organizer.id and event.status == "active"
    tickets = Ticket.objects.filter(event=event)
    assert tickets.count() == 250
    assert Order.objects.filter(event=event).count() == 63  # ceil(250 / 4)
    assert event.check_in_types.count() == 2
    for ticket_type in TicketType.objects.filter(event=event):
        live = tickets.filter(ticket_type=ticket_type).exclude(status="revoked").count()
        assert ticket_type.sold_count == live > 0
        assert ticket_type.quantity >= ticket_type.sold_count
        assert ticket_type.api_sold_count == 0
    statuses = dict(tickets.values_list("status").annotate(n=Count("id")))
    assert set(statuses) == {"active", "used", "revoked"}
    assert not tickets.filter(
        Q(status="used", used_at__isnull=True) | Q(status="active", used_at__isnull=False)
    ).exists()
    codes = list(tickets.values_list("reference_code", flat=True))
    assert len(set(codes)) == 250
    assert all(re.fullmatch(r"[2-9A-HJ-NP-Z]{8}", code) for code in codes)
    assert set(tickets.values_list("order__event_id", flat=True)) == {event_id}
    assert "tickets" in progress and "250/250" in progress

    response = app_client.get(
        f"/api/public/organizers/{organizer.id}/events/{event_id}/tickets", {"per_page": 100}
    )
    assert response.status_code == 200
    assert response.json()["total"] == 250


def test_creates_an_organizer_when_none_is_given():
    event_id, _ = _generate(tickets=3, seed=1)
    event = Event.objects.get(id=event_id)
    assert event.organizer.name == "Load test organizer"
    assert Ticket.objects.filter(event=event).count() == 3


@pytest.mark.parametrize(
    "options, message",
    [
        ({"tickets": 0}, "--tickets must be between 1 and 10,000,000."),
        ({"ticket_types": 0}, "--ticket-types and --tickets-per-order must be 1..100."),
        ({"used_percent": 60, "revoked_percent": 50}, "--used-percent and --revoked-percent"),
        ({"organizer": 2147483647}, "Organizer 2147483647 does not exist."),
    ],
)
def test_rejects_bad_arguments(options, message):
    OrganizerFactory()
    with pytest.raises(CommandError, match=re.escape(message)):
        _generate(**options)
    assert not Ticket.objects.exists()

"""Big events stay cheap: the ticket list and a ticket's page run the same number of queries
whether the event has 10 tickets or 500 (and, by the same plan, 200,000)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from checkin.models import CheckInLog, TicketCheckIn
from tests.factories import CheckInTypeFactory, EventFactory, OrderFactory, TicketTypeFactory
from tickets.models import Ticket


def _big_event(organizer, n):
    event = EventFactory(organizer=organizer)
    types = TicketTypeFactory.create_batch(3, event=event, quantity=1000)
    order = OrderFactory(event=event)
    Ticket.objects.bulk_create(
        Ticket(
            event=event,
            order=order,
            ticket_type=types[i % 3],
            firstname="Holder",
            lastname=str(i),
            email=f"holder{i}@example.com",
            reference_code=f"E{event.pk}T{i:06d}",
        )
        for i in range(n)
    )
    ticket = Ticket.objects.filter(event=event).order_by("pk").first()
    TicketCheckIn.objects.create(
        ticket=ticket, check_in_type=CheckInTypeFactory(event=event), used_at=timezone.now()
    )
    CheckInLog.objects.bulk_create(
        CheckInLog(ticket=ticket, action="check_in", at=timezone.now(), note=str(i))
        # History grows with the event too, so a query per history row would show.
        for i in range(max(n // 50, 2))
    )
    return event, ticket


def _count(client, url, params=None):
    client.get(url, params or {})  # warm the process-wide caches (content types)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    assert response.status_code == 200
    return len(queries)


@pytest.mark.django_db
@pytest.mark.parametrize("params", [{}, {"status__exact": "active"}, {"q": "holder1"}])
def test_ticket_changelist_query_count_is_constant(staff_client, organizer, params):
    counts = []
    for n in (10, 500):
        event, _ = _big_event(organizer, n)
        counts.append(
            _count(
                staff_client,
                reverse("admin:tickets_ticket_changelist"),
                {"event_id": event.pk, **params},
            )
        )

    # session, user, memberships, event and ticket type filter choices, count, page,
    # and Django's two permission lookups for the template's `perms`
    assert counts == [9, 9]


@pytest.mark.django_db
@pytest.mark.parametrize("client_fixture", ["staff_client", "admin_client_a"])
def test_ticket_change_page_query_count_is_constant(request, organizer, client_fixture):
    client = request.getfixturevalue(client_fixture)
    counts = []
    for n in (10, 500):
        _, ticket = _big_event(organizer, n)
        counts.append(_count(client, reverse("admin:tickets_ticket_change", args=[ticket.pk])))

    # session, user, memberships, ticket (with event, type, order, holder), admitted types,
    # history, form answers, and the two permission lookups
    assert counts == [9, 9]


@pytest.mark.django_db
def test_order_changelist_and_check_in_log_query_counts_are_constant(staff_client, organizer):
    orders, logs = [], []
    for n in (10, 500):
        event, _ = _big_event(organizer, n)
        orders.append(_count(staff_client, reverse("admin:tickets_order_changelist")))
        logs.append(
            _count(
                staff_client, reverse("admin:checkin_checkinlog_changelist"), {"event_id": event.pk}
            )
        )

    assert orders[0] == orders[1]
    assert logs[0] == logs[1]

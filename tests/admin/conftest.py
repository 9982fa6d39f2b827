"""Two organizers, each with an event, tickets, an order, a check-in log and an application,
and admin users of every kind: staff and admin members of A, a superuser."""

from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import timezone

from checkin.models import CheckInLog
from tests.factories import (
    ApplicationFactory,
    CheckInTypeFactory,
    EventFactory,
    MembershipFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)


def _world(organizer, prefix):
    event = EventFactory(organizer=organizer, title=f"{prefix} Festival")
    ticket_type = TicketTypeFactory(event=event, name=f"{prefix} Regular", quantity=100)
    order = OrderFactory(event=event, buyer_email=f"{prefix.lower()}-buyer@example.com")
    ticket = TicketFactory(
        event=event, ticket_type=ticket_type, order=order, reference_code=f"{prefix.upper()}CODE01"
    )
    used = TicketFactory(
        event=event,
        ticket_type=ticket_type,
        order=order,
        status="used",
        reference_code=f"{prefix.upper()}USED01",
    )
    log = CheckInLog.objects.create(
        ticket=used, action=CheckInLog.Action.CHECK_IN, at=timezone.now(), note=f"{prefix} gate"
    )
    application = ApplicationFactory(organizer=organizer, name=f"{prefix} gate app")
    return SimpleNamespace(
        organizer=organizer,
        event=event,
        ticket_type=ticket_type,
        order=order,
        ticket=ticket,
        used=used,
        log=log,
        application=application,
    )


@pytest.fixture
def world_a(organizer):
    return _world(organizer, "A")


@pytest.fixture
def world_b(other_organizer):
    return _world(other_organizer, "B")


@pytest.fixture
def staff_a(organizer):
    """Role `staff` in A: views and operates, changes nothing."""
    user = UserFactory(username="gate-staff", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role="staff")
    return user


@pytest.fixture
def admin_a(organizer):
    """Role `admin` in A: edits everything of A."""
    user = UserFactory(username="org-admin", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role="admin")
    return user


@pytest.fixture
def superuser(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def staff_client(staff_a):
    return _client(staff_a)


@pytest.fixture
def admin_client_a(admin_a):
    return _client(admin_a)


@pytest.fixture
def super_client(superuser):
    return _client(superuser)


@pytest.fixture
def multi_event(organizer):
    """An event of A with check-in types day1, day2."""
    event = EventFactory(organizer=organizer, title="A Multi")
    ticket_type = TicketTypeFactory(event=event, name="Multi Regular")
    day1 = CheckInTypeFactory(event=event, name="Day 1")
    day2 = CheckInTypeFactory(event=event, name="Day 2")
    ticket = TicketFactory(event=event, ticket_type=ticket_type, reference_code="MULTI0001")
    return SimpleNamespace(
        event=event, ticket_type=ticket_type, day1=day1, day2=day2, ticket=ticket
    )

"""Staff see in the check-in log which tickets two offline gates both admitted (CONTRACT §11)."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin.helpers import changelist_column
from tests.factories import MembershipFactory, OrganizerFactory, TicketFactory, UserFactory

from .test_batch import scan, upload

pytestmark = pytest.mark.django_db


def test_check_in_log_filter_shows_tickets_admitted_twice_offline(client, event, ticket_type):
    twice, once = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2))
    upload(client, event, [scan("gate-a-0001", ticket_id=twice.id)])  # gate A, offline
    upload(  # gate B admitted the same ticket offline, and another one
        client,
        event,
        [scan("gate-b-0001", ticket_id=twice.id), scan("gate-b-0002", ticket_id=once.id)],
    )
    staff = Client()
    staff.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    url = reverse("admin:checkin_checkinlog_changelist")

    doubled = staff.get(url, {"scan": "twice"})
    applied = staff.get(url, {"scan": "applied"})
    everything = staff.get(url)

    assert doubled.status_code == applied.status_code == everything.status_code == 200
    assert changelist_column(doubled, "ticket") == [twice.reference_code]
    assert changelist_column(doubled, "scan id") == ["gate-b-0001"]
    assert changelist_column(doubled, "error") == ["ticket_already_used"]
    assert sorted(changelist_column(applied, "scan id")) == ["gate-a-0001", "gate-b-0002"]
    assert "Admitted twice offline" in everything.content.decode()


def test_uploaded_scans_are_listed_for_the_organizers_staff_only(client, event, ticket_type):
    """Scans that named no ticket of the event are kept too, and only the event's organizer's
    staff see them."""
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    upload(
        client,
        event,
        [scan("gate-c-0001", ticket_id=ticket.id), scan("gate-c-0002", reference_code="NOSUCH01")],
    )
    member, outsider = Client(), Client()
    staff = UserFactory(username="gate-member", is_staff=True)
    MembershipFactory(user=staff, organizer=event.organizer, role="staff")
    member.force_login(staff)
    other = UserFactory(username="gate-outsider", is_staff=True)
    MembershipFactory(user=other, organizer=OrganizerFactory(), role="staff")
    outsider.force_login(other)
    url = reverse("admin:checkin_scanrecord_changelist")

    listed = member.get(url)
    hidden = outsider.get(url)

    assert listed.status_code == 200
    assert sorted(changelist_column(listed, "scan id")) == ["gate-c-0001", "gate-c-0002"]
    assert sorted(changelist_column(listed, "error")) == ["-", "not_found"]
    assert hidden.status_code == 200 and "gate-c-000" not in hidden.content.decode()

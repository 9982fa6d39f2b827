"""Staff see in the check-in log which tickets two offline gates both admitted (CONTRACT §11)."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin.helpers import changelist_column
from tests.factories import TicketFactory, UserFactory

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
    url = reverse("admin:tickets_checkinlog_changelist")

    doubled = staff.get(url, {"scan": "twice"})
    applied = staff.get(url, {"scan": "applied"})
    everything = staff.get(url)

    assert doubled.status_code == applied.status_code == everything.status_code == 200
    assert changelist_column(doubled, "ticket") == [twice.reference_code]
    assert changelist_column(doubled, "scan id") == ["gate-b-0001"]
    assert changelist_column(doubled, "error") == ["ticket_already_used"]
    assert sorted(changelist_column(applied, "scan id")) == ["gate-a-0001", "gate-b-0002"]
    assert "Admitted twice offline" in everything.content.decode()

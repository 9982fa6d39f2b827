"""The one-statement admission (PostgreSQL) answers and records exactly as the locked service."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import FormFieldFactory, OrderFactory, TicketFactory
from tickets.models import CheckInLog, Ticket, TicketFormAnswer
from tickets.services import gate

from .helpers import checkin_url, client_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

# What legitimately differs between two tickets checked in one after the other.
_OWN = {"id", "order_id", "reference_code", "ticket_url", "created_at", "updated_at"}


def _holder_ticket(event, ticket_type, field):
    ticket = TicketFactory(
        event=event,
        ticket_type=ticket_type,
        order=OrderFactory(event=event),
        firstname="Somchai",
        lastname="Jaidee",
        email="somchai@example.com",
    )
    TicketFormAnswer.objects.create(ticket=ticket, field=field, value="L")
    return ticket


@pytest.mark.parametrize("token", ["user_token", "app_token"])
def test_statement_and_locked_service_give_the_same_answer_and_audit_row(
    request, monkeypatch, token, event, ticket_type
):
    field = FormFieldFactory(event=event, label="T-shirt size")
    by_statement, by_service = (_holder_ticket(event, ticket_type, field) for _ in range(2))
    client = client_for(request.getfixturevalue(token))
    body = {"used_at": (timezone.now() - timedelta(minutes=3)).isoformat(), "note": "gate 4"}

    def locked_service_not_expected(**kwargs):
        raise AssertionError("the admission statement should have answered")

    with monkeypatch.context() as patch:
        patch.setattr(gate, "ticket_check_in", locked_service_not_expected)
        fast = client.post(checkin_url(by_statement), body)
    skipped = []
    with monkeypatch.context() as patch:
        patch.setattr(gate, "admit", lambda **kwargs: skipped.append(kwargs))
        locked = client.post(checkin_url(by_service), body)

    assert skipped, "the locked service should have answered"
    assert fast.status_code == locked.status_code == 200
    fast_ticket, locked_ticket = fast.json().pop("ticket"), locked.json().pop("ticket")
    assert fast.json() == locked.json()
    assert {k: v for k, v in fast_ticket.items() if k not in _OWN} == {
        k: v for k, v in locked_ticket.items() if k not in _OWN
    }
    assert fast_ticket["forms"] == [{"id": field.id, "label": "T-shirt size", "value": "L"}]
    rows = [
        Ticket.objects.values("status", "used_at", "nfc_uid").get(pk=t.pk)
        for t in (by_statement, by_service)
    ]
    assert rows[0] == rows[1]
    logs = [
        CheckInLog.objects.filter(ticket=t)
        .values("action", "at", "actor_user_id", "actor_application_id", "note", "nfc_uid")
        .get()
        for t in (by_statement, by_service)
    ]
    assert logs[0] == logs[1]

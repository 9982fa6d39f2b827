"""The one-statement admission (PostgreSQL) answers and records exactly as the locked service,
in simple mode and with check-in types."""

from datetime import timedelta

import pytest
from django.utils import timezone

from checkin.models import CheckInLog, TicketCheckIn
from checkin.services import gate, scans
from checkin.services import statements as admission
from tests.factories import (
    CheckInTypeFactory,
    FormFieldFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tickets.keys import TicketKey
from tickets.models import Ticket, TicketFormAnswer
from tickets.services.common import Actor
from webhooks.models import WebhookEvent
from webhooks.outbox import webhook_events_complete
from webhooks.services import webhook_endpoint_create

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
        patch.setattr(admission, "admit", lambda **kwargs: skipped.append(kwargs))
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


@pytest.mark.parametrize("token", ["user_token", "app_token"])
def test_with_check_in_types_statement_and_locked_service_agree(
    request, monkeypatch, token, event, ticket_type
):
    field = FormFieldFactory(event=event, label="T-shirt size")
    entrance, vip = CheckInTypeFactory(event=event), CheckInTypeFactory(event=event)
    vip.ticket_types.set([TicketTypeFactory(event=event)])  # not valid for these tickets
    by_statement, by_service = (_holder_ticket(event, ticket_type, field) for _ in range(2))
    client = client_for(request.getfixturevalue(token))
    at = timezone.now() - timedelta(minutes=3)
    body = {"used_at": at.isoformat(), "note": "gate 4"}
    body["check_in_type_ids"] = [entrance.id, vip.id, 999999, entrance.id]

    with monkeypatch.context() as patch:
        patch.setattr(gate, "ticket_check_in", lambda **kwargs: pytest.fail("locked path"))
        fast = client.post(checkin_url(by_statement), body, format="json")
    with monkeypatch.context() as patch:
        patch.setattr(admission, "admit", lambda **kwargs: None)
        locked = client.post(checkin_url(by_service), body, format="json")

    assert fast.status_code == locked.status_code == 200
    fast_ticket, locked_ticket = fast.json().pop("ticket"), locked.json().pop("ticket")
    assert fast.json() == locked.json()
    assert [r["success"] for r in fast.json()["check_in_results"]] == [True, False, False, False]
    assert {k: v for k, v in fast_ticket.items() if k not in _OWN} == {
        k: v for k, v in locked_ticket.items() if k not in _OWN
    }
    for model, fields in (
        (CheckInLog, ("action", "at", "check_in_type_id", "actor_user_id", "note", "scan_id")),
        (TicketCheckIn, ("check_in_type_id", "used_at")),
    ):
        rows = [
            list(model.objects.filter(ticket=t).order_by("pk").values(*fields))
            for t in (by_statement, by_service)
        ]
        assert rows[0] == rows[1]


def test_with_check_in_types_the_statement_records_each_admitting_scan_once(settings, event):
    """`ticket.checked_in` goes out for a scan that admitted some type, with the ticket as the
    statement left it; a scan that admitted none records nothing."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    webhook_endpoint_create(
        organizer_id=event.organizer_id, url="http://127.0.0.1:9/in", event_types=["*"]
    )
    entrance, vip = CheckInTypeFactory(event=event), CheckInTypeFactory(event=event)
    ticket = TicketFactory(event=event)

    def scan(type_id):
        return scans.ticket_check_in_at_gate(
            organizer_id=event.organizer_id,
            event_id=event.id,
            key=TicketKey.id(ticket.id),
            actor=Actor(),
            check_in_type_ids=[type_id],
        )

    counts = []
    for type_id in (entrance.id, entrance.id, vip.id):
        scan(type_id)
        counts.append(WebhookEvent.objects.filter(type="ticket.checked_in").count())
    assert counts == [1, 1, 2]
    ids = list(WebhookEvent.objects.order_by("created_at", "id").values_list("pk", flat=True))
    [first, _] = webhook_events_complete(ids)
    assert first.payload["data"]["ticket"]["id"] == ticket.id
    assert first.payload["data"]["ticket"]["status"] == "used"


@pytest.mark.parametrize(
    ("kind", "head"),
    [
        ("simple", ("gate_decided", *admission.REFUSAL)),
        ("scan_id", ("gate_decided", "gate_scan_taken", *admission.REFUSAL)),
        ("typed", ("gate_decided", *admission.REFUSAL, *admission.TYPED)),
    ],
)
def test_the_statements_head_is_read_by_name_once_per_text(
    monkeypatch, user_token, event, ticket_type, kind, head
):
    """psycopg builds the row's description anew whenever it is asked (40-odd columns, with
    their types' information): the head's names are read from the first answer to a text."""
    monkeypatch.setattr(admission, "_head_names", {})
    types = [CheckInTypeFactory(event=event, name="Entrance").pk] if kind == "typed" else []
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2)]
    client = client_for(user_token)
    url = f"/api/public/organizers/{event.organizer_id}/events/{event.pk}/tickets/checkin"

    def scan(ticket):
        body = {"reference_code": ticket.reference_code}
        if kind == "scan_id":
            body["scan_id"] = f"scan-id-{ticket.pk}"
        if kind == "typed":
            body["check_in_type_ids"] = types
        return client.post(url, body, content_type="application/json")

    assert scan(tickets[0]).status_code == 200
    assert list(admission._head_names.values()) == [head]

    def description_read_again(cursor):
        raise AssertionError("the head's names are kept for the statement's text")

    monkeypatch.setattr(admission, "_head_of", description_read_again)
    second = scan(tickets[1])
    assert second.status_code == 200, second.content
    assert second.json()["ticket"]["reference_code"] == tickets[1].reference_code
    assert second.json()["ticket"]["status"] == "used"

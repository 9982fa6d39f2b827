"""The ticket services record their webhook events in their own transactions (CONTRACT §13),
with the API's Ticket and Order representations, and only for changes that happened."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_tasks_db.models import DBTaskResult

from checkin.services.gate import ticket_check_in, ticket_renew
from checkin.services.scans import ticket_check_in_at_gate
from tests.factories import CheckInTypeFactory, OrderFactory, TicketFactory
from tickets.exceptions import TicketAlreadyUsed, TicketRevoked
from tickets.keys import TicketKey
from tickets.models import Order
from tickets.selectors import orders_for_output, ticket_for_output
from tickets.serializers import OrderSerializer, TicketSerializer
from tickets.services.common import Actor
from tickets.services.issuing import ticket_create
from tickets.services.revoking import order_cancel, ticket_revoke
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.outbox import webhook_events_complete
from webhooks.services import webhook_endpoint_create, webhook_endpoint_update

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("private_urls_allowed")]

HOLDER = {
    "firstname": "Malee",
    "lastname": "Srisuk",
    "email": "m@example.com",
    "phone": "0891234567",
}
URL = "http://127.0.0.1:9/in"  # never sent to: these tests run no worker


def _endpoint(organizer, event_types=("*",)):
    endpoint, _ = webhook_endpoint_create(
        organizer_id=organizer.id, url=URL, event_types=list(event_types)
    )
    return endpoint


@pytest.fixture
def ticket(event, ticket_type):
    return TicketFactory(event=event, ticket_type=ticket_type)


def _events(type=None):
    """The events' payloads as delivered: one a statement recorded is rendered first."""
    events = WebhookEvent.objects.order_by("created_at", "id")
    ids = list((events.filter(type=type) if type else events).values_list("pk", flat=True))
    return [e.payload for e in webhook_events_complete(ids)]


def _as_api(ticket_id: int) -> dict:
    return TicketSerializer().to_representation(ticket_for_output(pk=ticket_id))


def test_creation_records_ticket_created_with_the_api_representation(event, ticket_type):
    _endpoint(event.organizer)

    ticket = ticket_create(
        event=event, ticket_type_id=ticket_type.id, actor=Actor(), **HOLDER
    ).ticket

    [payload] = _events()
    assert payload["type"] == "ticket.created"
    assert (payload["organizer_id"], payload["event_id"]) == (event.organizer_id, event.id)
    assert payload["data"] == {"ticket": _as_api(ticket.id)}
    assert WebhookEvent.objects.get().dispatched_at is None  # in the outbox, no task
    assert not DBTaskResult.objects.filter(queue_name="webhooks").exists()


def test_a_rolled_back_creation_records_nothing(event, ticket_type):
    _endpoint(event.organizer)
    with pytest.raises(RuntimeError), transaction.atomic():
        ticket_create(event=event, ticket_type_id=ticket_type.id, actor=Actor(), **HOLDER)
        raise RuntimeError("the caller fails after the creation")
    assert _events() == [] and WebhookDelivery.objects.count() == 0


def test_check_in_and_renew_record_their_events(event, ticket):
    _endpoint(event.organizer)

    ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor())
    used = _as_api(ticket.id)
    ticket_renew(event=event, ticket_id=ticket.id, actor=Actor())

    assert [(p["type"], p["data"]) for p in _events()] == [
        ("ticket.checked_in", {"ticket": used}),
        ("ticket.renewed", {"ticket": _as_api(ticket.id)}),
    ]
    assert used["status"] == "used"


def test_the_gate_records_the_check_in_on_either_path(event, ticket, monkeypatch):
    """On PostgreSQL the one-statement admission, whose dispatch renders the data; on SQLite
    the locked path."""
    _endpoint(event.organizer, ["ticket.checked_in"])

    ticket_check_in_at_gate(
        organizer_id=event.organizer_id,
        event_id=event.id,
        key=TicketKey.id(ticket.id),
        actor=Actor(),
    )
    webhook_events_complete(list(WebhookEvent.objects.values_list("pk", flat=True)))

    [payload] = _events()
    assert payload["type"] == "ticket.checked_in"
    assert payload["data"] == {"ticket": _as_api(ticket.id)}


def test_a_rejected_check_in_records_nothing(event):
    _endpoint(event.organizer)
    used = TicketFactory(event=event, status="used")
    revoked = TicketFactory(event=event, status="revoked")

    for ticket, error in ((used, TicketAlreadyUsed), (revoked, TicketRevoked)):
        with pytest.raises(error):
            ticket_check_in_at_gate(
                organizer_id=event.organizer_id,
                event_id=event.id,
                key=TicketKey.id(ticket.id),
                actor=Actor(),
            )
    assert _events() == []


def test_multiple_mode_records_only_when_a_type_is_admitted(event, ticket):
    _endpoint(event.organizer)
    entry = CheckInTypeFactory(event=event)

    ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor(), check_in_type_ids=[entry.id])
    ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor(), check_in_type_ids=[entry.id])

    assert [p["type"] for p in _events()] == ["ticket.checked_in"]


def test_revoke_records_ticket_revoked(event, ticket):
    _endpoint(event.organizer)

    ticket_revoke(event=event, ticket_id=ticket.id, reason="fraud", actor=Actor())

    [payload] = _events()
    assert payload["type"] == "ticket.revoked"
    assert payload["data"]["ticket"]["revoke_note"] == "fraud"
    assert payload["data"] == {"ticket": _as_api(ticket.id)}


def test_order_cancel_records_the_order_then_each_revoked_ticket(event, ticket_type):
    _endpoint(event.organizer)
    order = OrderFactory(event=event)
    first, second = TicketFactory.create_batch(2, event=event, order=order, ticket_type=ticket_type)
    TicketFactory(event=event, order=order, ticket_type=ticket_type, status="revoked")

    order_cancel(order_id=order.id, actor=Actor())

    payloads = _events()
    assert [p["type"] for p in payloads] == ["order.cancelled", "ticket.revoked", "ticket.revoked"]
    order_as_api = OrderSerializer().to_representation(
        orders_for_output(Order.objects.filter(pk=order.pk)).get()
    )
    assert payloads[0]["data"] == {"order": order_as_api}
    assert order_as_api["status"] == "cancelled"
    assert [p["data"] for p in payloads[1:]] == [
        {"ticket": _as_api(first.id)},
        {"ticket": _as_api(second.id)},
    ]


def test_only_subscribed_types_are_recorded(event, ticket):
    _endpoint(event.organizer, ["ticket.revoked"])
    ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor())
    assert _events() == []


def test_without_endpoints_nothing_is_recorded_and_no_payload_is_built(event, ticket, monkeypatch):
    def not_built(*args, **kwargs):
        raise AssertionError("the payload was built although no endpoint wants it")

    monkeypatch.setattr(TicketSerializer, "to_representation", not_built)
    ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor())
    assert _events() == []


def test_subscriptions_are_read_by_every_change_in_its_transaction(event):
    first, second = TicketFactory.create_batch(2, event=event)
    for ticket in (first, second):
        with CaptureQueriesContext(connection) as context:
            ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor())
        endpoint_reads = [q for q in context.captured_queries if "webhookendpoint" in q["sql"]]
        assert len(endpoint_reads) == 1


def test_an_endpoint_another_process_registered_gets_the_next_change_at_once(event):
    """Another server's registration tells this process nothing: the change reads it."""
    first, second = TicketFactory.create_batch(2, event=event)
    ticket_check_in(event=event, ticket_id=first.id, actor=Actor())  # no endpoint yet
    WebhookEndpoint.objects.create(
        organizer=event.organizer, url=URL, event_types=["ticket.checked_in"], secret_encrypted=""
    )
    ticket_check_in(event=event, ticket_id=second.id, actor=Actor())
    ticket_renew(event=event, ticket_id=second.id, actor=Actor())  # not subscribed: no event

    [payload] = _events()
    assert (payload["type"], payload["data"]["ticket"]["id"]) == ("ticket.checked_in", second.id)


def test_an_endpoint_registered_or_changed_gets_the_next_event(event):
    first, second, third = TicketFactory.create_batch(3, event=event)
    ticket_check_in(event=event, ticket_id=first.id, actor=Actor())
    endpoint = _endpoint(event.organizer, ["ticket.revoked"])
    ticket_check_in(event=event, ticket_id=second.id, actor=Actor())
    assert _events() == []

    webhook_endpoint_update(
        endpoint_id=endpoint.id, url=URL, event_types=["ticket.checked_in"], is_active=True
    )
    ticket_check_in(event=event, ticket_id=third.id, actor=Actor())

    [payload] = _events()
    assert payload["data"]["ticket"]["id"] == third.id

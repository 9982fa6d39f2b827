"""Ticket changes reach a real receiver through a real worker (CONTRACT §13), on PostgreSQL and
SQLite: the events are recorded by the ticket services in their transactions."""

import json
import time

import pytest
from django.conf import settings
from django.db import connection, transaction
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from standardwebhooks.webhooks import Webhook

from checkin.services.scans import ticket_check_in_at_gate
from tests.factories import (
    ApplicationFactory,
    EventFactory,
    MembershipFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support import TokenClient, mint_token
from tickets.keys import TicketKey
from tickets.models import Ticket
from tickets.services.common import Actor
from tickets.services.issuing import ticket_create
from webhooks.delivering import BATCH_POSTS
from webhooks.models import WebhookDelivery

from .helpers import endpoint_for, wait_for

pytestmark = pytest.mark.usefixtures("private_urls_allowed")

HOLDER = {
    "firstname": "Malee",
    "lastname": "Srisuk",
    "email": "m@example.com",
    "phone": "0891234567",
}


@pytest.fixture(autouse=True)
def _database_shared_with_workers(shared_database):
    """First, so that every row this test writes is in the database the workers read."""


@pytest.fixture
def event(manager):
    return EventFactory(organizer=manager)


@pytest.fixture
def gate_client(manager):
    admin = UserFactory(username="gate")
    MembershipFactory(user=admin, organizer=manager, role="admin")
    return TokenClient(
        mint_token(
            application=ApplicationFactory(organizer=manager), user=admin, scope="public organizer"
        )
    )


def _checkin_url(ticket) -> str:
    event = ticket.event
    return (
        f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets/{ticket.id}/checkin"
    )


def test_a_check_in_through_the_api_reaches_the_receiver_signed_within_5_s(
    manager, event, gate_client, receiver, workers
):
    _, secret = endpoint_for(receiver, manager, ["ticket.checked_in"])
    ticket = TicketFactory(event=event)
    workers.start()
    wait_for(lambda: _worker_polling(workers), timeout=30, what="the worker to start")

    response = gate_client.post(_checkin_url(ticket))
    checked_in = time.monotonic()

    assert response.status_code == 200, response.content
    wait_for(lambda: receiver.requests, timeout=5, what="the check-in event", log=workers.log)
    took = time.monotonic() - checked_in
    [request] = receiver.requests
    payload = Webhook(secret).verify(request["body"], request["headers"])
    assert payload["type"] == "ticket.checked_in"
    assert (payload["organizer_id"], payload["event_id"]) == (manager.id, event.id)
    assert payload["data"] == {"ticket": response.json()["ticket"]}
    print(f"\ncheck-in to receiver: {took:.2f} s")


def _worker_polling(workers) -> bool:
    """The worker has started once it logs its start line."""
    return workers.log.exists() and "Starting worker" in workers.log.read_text()


def test_a_rejected_check_in_sends_nothing(manager, event, gate_client, receiver, workers):
    endpoint_for(receiver, manager)
    revoked = TicketFactory(event=event, status="revoked")
    used = TicketFactory(event=event, status="used")
    admitted = TicketFactory(event=event)
    workers.start()

    for rejected, error in ((revoked, "ticket_revoked"), (used, "ticket_already_used")):
        response = gate_client.post(_checkin_url(rejected))
        assert (response.status_code, response.json()["error"]) == (422, error)
    assert gate_client.post(_checkin_url(admitted)).status_code == 200

    # Deliveries run in the order they were recorded: once the admission arrived, an event of
    # the rejections would have too.
    wait_for(lambda: receiver.requests, timeout=30, what="the admission", log=workers.log)
    assert [b["data"]["ticket"]["id"] for b in receiver.bodies()] == [admitted.id]
    assert WebhookDelivery.objects.count() == 1


def test_a_rolled_back_creation_sends_neither_webhook_nor_email(manager, event, receiver, workers):
    endpoint_for(receiver, manager)
    ticket_type = TicketTypeFactory(event=event)
    workers.start()

    with pytest.raises(RuntimeError), transaction.atomic():
        ticket_create(event=event, ticket_type_id=ticket_type.id, actor=Actor(), **HOLDER)
        raise RuntimeError("the caller fails after the creation")
    kept = ticket_create(event=event, ticket_type_id=ticket_type.id, actor=Actor(), **HOLDER).ticket

    wait_for(lambda: receiver.requests, timeout=30, what="the kept ticket", log=workers.log)
    emails = DBTaskResult.objects.filter(task_path="tickets.tasks.ticket_email_send")
    wait_for(
        lambda: emails.filter(status=TaskResultStatus.SUCCESSFUL).exists(),
        timeout=30,
        what="the kept ticket's email",
        log=workers.log,
    )
    assert [b["data"]["ticket"]["id"] for b in receiver.bodies()] == [kept.id]
    assert [t.args_kwargs["args"] for t in emails] == [[kept.id]]
    assert Ticket.objects.count() == 1


def test_worker_killed_during_1000_check_ins_loses_no_event(manager, event, receiver, workers):
    """Check-ins through the gate service (on PostgreSQL the one-statement admission in its
    transaction with the event; on SQLite the locked path); the worker is killed mid-way."""
    endpoint_for(receiver, manager, ["ticket.checked_in"])
    ticket_type, order = TicketTypeFactory(event=event), OrderFactory(event=event)
    tickets = Ticket.objects.bulk_create(
        Ticket(
            event=event,
            order=order,
            ticket_type=ticket_type,
            reference_code=f"KILL{n:04d}",
            email=f"h{n}@example.com",
        )
        for n in range(1000)
    )
    workers.lease_seconds = 5  # the task in flight at the kill runs again 5 s after it began
    first = workers.start("first")
    for n, ticket in enumerate(tickets):
        result = ticket_check_in_at_gate(
            organizer_id=manager.id,
            event_id=event.id,
            key=TicketKey.id(ticket.id),
            actor=Actor(),
        )
        assert result.ticket.status == "used"
        if n == 300:
            wait_for(lambda: len(receiver.requests) >= 50, timeout=30, what="50 deliveries")
            workers.kill(first)
    killed_after = len(receiver.ids())
    workers.start("second")

    wait_for(
        lambda: WebhookDelivery.objects.filter(status="delivered").count() == 1000,
        timeout=180,
        what="every delivery",
        log=workers.log,
    )
    unique = receiver.unique()
    assert len(unique) == 1000
    delivered = sorted(json.loads(r["body"])["data"]["ticket"]["id"] for r in unique.values())
    assert delivered == sorted(t.id for t in tickets)
    assert 50 <= killed_after < 1000
    # At most the batches in flight at the kill, each holding one of the organizer's slots.
    assert len(receiver.requests) - 1000 <= BATCH_POSTS * settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER
    print(
        f"\n{connection.vendor}: killed after {killed_after} delivered; "
        f"{len(receiver.requests)} requests for 1000 check-ins; {len(unique)} distinct ids"
    )

"""Delivery by real worker processes to a real receiver (CONTRACT §13), on PostgreSQL and SQLite.

Workers claim tasks with `SELECT ... FOR UPDATE SKIP LOCKED` (SQLite: one exclusive
transaction at a time), and their relays claim the outbox's events the same way, so two workers
never run the same task nor dispatch an event twice; a worker killed mid-task leaves its tasks
RUNNING until the lease makes them READY again.
"""

from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django_tasks_db.models import DBTaskResult
from standardwebhooks.webhooks import Webhook

from tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from tests.support import TokenClient, mint_token
from webhooks.delivering import BATCH_POSTS
from webhooks.models import WebhookAttempt, WebhookDelivery
from webhooks.services import webhook_event_record

from .helpers import endpoint_for, wait_for

pytestmark = pytest.mark.usefixtures("private_urls_allowed")


@pytest.fixture(autouse=True)
def _database_shared_with_workers(shared_database):
    """First, so that every row this test writes is in the database the workers read."""


TICKET = {"ticket": {"id": 7, "reference_code": "ABC123", "status": "used"}}


def _record(organizer, n: int = 0, type: str = "ticket.checked_in"):
    with transaction.atomic():
        return webhook_event_record(
            organizer_id=organizer.id,
            event_id=12,
            type=type,
            data={"ticket": {**TICKET["ticket"], "id": n}},
        )


def test_ping_through_the_api_reaches_the_receiver_signed(manager, receiver, workers):
    admin = UserFactory(username="admin")
    MembershipFactory(user=admin, organizer=manager, role="admin")
    client = TokenClient(
        mint_token(
            application=ApplicationFactory(organizer=manager),
            user=admin,
            scope="public organizer",
        )
    )
    created = client.post(
        f"/api/public/organizers/{manager.id}/webhooks",
        {"url": receiver.url, "event_types": ["*"]},
        format="json",
    )
    assert created.status_code == 201, created.content
    webhook = created.json()["webhook"]
    workers.start()

    response = client.post(f"/api/public/organizers/{manager.id}/webhooks/{webhook['id']}/test")

    assert response.status_code == 200 and response.json() == {"success": True}
    wait_for(lambda: receiver.requests, timeout=30, what="the ping", log=workers.log)
    [request] = receiver.requests
    payload = Webhook(webhook["secret"]).verify(request["body"], request["headers"])
    assert payload["type"] == "ping"
    assert payload["id"] == request["headers"]["webhook-id"]
    assert payload["organizer_id"] == manager.id
    assert payload["event_id"] is None
    assert payload["data"] == {"webhook": {"id": webhook["id"], "url": receiver.url}}
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["path"] == "/hooks"


def test_failed_attempts_are_retried_with_the_same_webhook_id(manager, receiver, workers):
    _, secret = endpoint_for(receiver, manager)
    receiver.statuses = [500, 500]
    workers.start()

    event = _record(manager)

    wait_for(
        lambda: WebhookDelivery.objects.filter(event=event, status="delivered").exists(),
        timeout=30,
        what="the delivery after two failures",
        log=workers.log,
    )
    delivery = WebhookDelivery.objects.get(event=event)
    assert receiver.ids() == {event.id: 3}
    for request in receiver.requests:
        Webhook(secret).verify(request["body"], request["headers"])
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery).order_by("attempted_at"))
    assert [a.status_code for a in attempts] == [500, 500, 200]
    # Backoff 1 s then 2 s (WEBHOOK_RETRY_BASE_SECONDS=1 for these workers).
    assert [a.next_retry_at - a.attempted_at if a.next_retry_at else None for a in attempts] == [
        timedelta(seconds=1),
        timedelta(seconds=2),
        None,
    ]
    assert attempts[1].attempted_at >= attempts[0].next_retry_at
    assert all(a.error == "" and a.duration_ms >= 0 for a in attempts)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count) == ("delivered", 3)
    assert delivery.next_attempt_at is None


def test_a_rolled_back_change_sends_nothing(manager, receiver, workers):
    endpoint_for(receiver, manager)
    workers.start()
    rolled_back = []

    with pytest.raises(RuntimeError), transaction.atomic():
        rolled_back.append(_record(manager, 1))
        raise RuntimeError("the change fails after recording its event")
    sent = _record(manager, 2)

    # Tasks run in the order they were enqueued: once the later event arrived, the earlier
    # one would have too.
    wait_for(lambda: sent.id in receiver.ids(), timeout=30, what="the later event")
    assert rolled_back[0] is not None
    assert list(receiver.ids()) == [sent.id]
    assert WebhookDelivery.objects.count() == 1


def test_worker_killed_while_1000_events_are_recorded_loses_none(manager, receiver, workers):
    endpoint_for(receiver, manager)
    workers.lease_seconds = 5  # the task in flight at the kill runs again 5 s after it began
    first = workers.start("first")
    events = []
    for n in range(1000):
        events.append(_record(manager, n).id)
        if n == 300:
            # Kill the worker in the middle of its work, with events still being recorded.
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
    assert set(unique) == set(events)
    assert len(unique) == 1000
    assert 50 <= killed_after < 1000
    # At most the batches in flight at the kill (sent, not yet logged: each holds one of the
    # organizer's slots until it is logged) reached the receiver twice.
    assert len(receiver.requests) - 1000 <= BATCH_POSTS * settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER
    print(
        f"\nkilled after {killed_after} delivered; {len(receiver.requests)} requests for "
        f"1000 events; {len(unique)} distinct ids"
    )


def test_two_workers_deliver_each_event_once(manager, receiver, workers):
    endpoint_for(receiver, manager)
    workers.start("one")
    workers.start("two")

    events = [_record(manager, n).id for n in range(1000)]

    wait_for(
        lambda: WebhookDelivery.objects.filter(status="delivered").count() == 1000,
        timeout=180,
        what="every delivery",
        log=workers.log,
    )
    assert receiver.ids() == dict.fromkeys(events, 1)
    assert WebhookAttempt.objects.count() == 1000
    by_worker, dispatched = Counter(), set()  # tasks run by each process (`one-<thread>`)
    for worker_ids, args_kwargs in DBTaskResult.objects.values_list("worker_ids", "args_kwargs"):
        [worker] = worker_ids
        by_worker[worker.rsplit("-", 1)[0]] += 1
        dispatched.update(args_kwargs["args"][0])
    assert set(by_worker) == {"one", "two"}
    assert dispatched == set(events)
    print(f"\ntasks run: {by_worker}")

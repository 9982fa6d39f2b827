"""The outbox of webhook events (`webhooks.outbox`): changes record rows of our own table, a relay
queues their dispatch through django-tasks' `enqueue` in the transaction that marks them, a task
per organizer's batch; two relays never take the same row; a relay that fails leaves its rows."""

import threading
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tests.factories import OrganizerFactory
from webhooks import outbox, tasks
from webhooks.models import WebhookEvent
from webhooks.pruning import webhook_events_prune
from webhooks.queueing import QUEUE
from webhooks.services import webhook_endpoint_create, webhook_event_record

pytestmark = pytest.mark.usefixtures("private_urls_allowed")

DISPATCH = "webhooks.tasks.webhook_events_dispatch"


def _organizer_with_endpoint():
    organizer = OrganizerFactory()
    webhook_endpoint_create(
        organizer_id=organizer.id, url="http://127.0.0.1:9/in", event_types=["*"]
    )
    return organizer


def _record(organizer, n: int = 0) -> str:
    with transaction.atomic():
        return webhook_event_record(
            organizer_id=organizer.id, event_id=1, type="ticket.created", data={"n": n}
        ).pk


def _dispatched() -> list[list[str]]:
    tasks = DBTaskResult.objects.filter(task_path=DISPATCH).order_by("enqueued_at", "id")
    return [task.args_kwargs["args"][0] for task in tasks]


@pytest.mark.django_db
def test_a_relay_queues_a_task_per_organizers_batch_and_marks_the_events():
    a, b = _organizer_with_endpoint(), _organizer_with_endpoint()
    a_events = [_record(a, n) for n in range(outbox.BATCH_EVENTS + 5)]
    b_events = [_record(b, n) for n in range(3)]

    assert outbox.webhook_outbox_relay() == len(a_events) + len(b_events)

    assert _dispatched() == [
        a_events[: outbox.BATCH_EVENTS],
        a_events[outbox.BATCH_EVENTS :],
        b_events,
    ]
    assert not WebhookEvent.objects.filter(dispatched_at=None).exists()
    assert outbox.webhook_outbox_relay() == 0  # nothing twice
    assert len(_dispatched()) == 3


@pytest.mark.django_db
def test_a_relay_takes_the_oldest_first_up_to_its_limit():
    organizer = _organizer_with_endpoint()
    events = [_record(organizer, n) for n in range(5)]
    WebhookEvent.objects.filter(pk=events[4]).update(
        created_at=timezone.now() - timedelta(minutes=1)
    )

    assert outbox.webhook_outbox_relay(limit=2) == 2
    assert outbox.webhook_outbox_relay(limit=10) == 3

    assert _dispatched() == [[events[4], events[0]], events[1:4]]


@pytest.mark.django_db
def test_a_relay_that_fails_leaves_its_events_in_the_outbox(monkeypatch):
    a, b = _organizer_with_endpoint(), _organizer_with_endpoint()
    events = [_record(a), _record(b)]
    enqueue = tasks.webhook_events_dispatch.enqueue
    calls = []

    def enqueue_then_fail(event_ids):
        calls.append(event_ids)
        if len(calls) == 2:
            raise ConnectionError("the database went away")
        return enqueue(event_ids)

    monkeypatch.setattr(QUEUE, "events_dispatch", SimpleNamespace(enqueue=enqueue_then_fail))
    with pytest.raises(ConnectionError):
        outbox.webhook_outbox_relay()

    assert WebhookEvent.objects.filter(dispatched_at=None).count() == 2
    assert _dispatched() == []  # the first task went with the rollback
    monkeypatch.undo()
    assert outbox.webhook_outbox_relay() == 2
    assert sorted(pk for batch in _dispatched() for pk in batch) == sorted(events)


@pytest.mark.django_db
def test_a_rolled_back_change_leaves_nothing_in_the_outbox():
    organizer = _organizer_with_endpoint()
    with pytest.raises(RuntimeError), transaction.atomic():
        webhook_event_record(organizer_id=organizer.id, event_id=1, type="ticket.created", data={})
        raise RuntimeError("the change fails")

    assert outbox.webhook_outbox_relay() == 0


@pytest.mark.django_db
def test_pruning_keeps_an_old_event_still_in_the_outbox():
    organizer = _organizer_with_endpoint()
    waiting = _record(organizer)
    WebhookEvent.objects.update(created_at=timezone.now() - timedelta(days=40))

    pruned = webhook_events_prune(older_than=timezone.now() - timedelta(days=30))

    assert pruned.events == 0 and WebhookEvent.objects.filter(pk=waiting).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_relays_at_once_dispatch_each_event_once():
    """SELECT ... FOR UPDATE SKIP LOCKED: the second relay skips the rows the first holds."""
    organizers = [_organizer_with_endpoint() for _ in range(4)]
    events = [_record(organizers[n % 4], n) for n in range(400)]
    start = threading.Barrier(2)
    relayed = []

    def relay():
        try:
            start.wait(timeout=10)
            while n := outbox.webhook_outbox_relay(limit=50):
                relayed.append(n)
        finally:
            connection.close()

    threads = [threading.Thread(target=relay) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    dispatched = [pk for batch in _dispatched() for pk in batch]
    assert sorted(dispatched) == sorted(events)  # each once
    assert sum(relayed) == 400

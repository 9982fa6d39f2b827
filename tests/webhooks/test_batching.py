"""A webhook task runs with other due tasks of its kind (webhooks.batching): claimed and finished
as django-tasks' worker claims and finishes its own, made READY again when their work is left
undone or raises, and never run by two workers or lost to a killed one."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_tasks import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import exclusive_transaction

from webhooks import delivering
from webhooks.models import WebhookAttempt, WebhookDelivery
from webhooks.services import webhook_event_record
from webhooks.tasks import webhook_event_dispatch

from .helpers import endpoint_for, wait_for

pytestmark = pytest.mark.usefixtures("private_urls_allowed")

DISPATCH = "webhooks.tasks.webhook_event_dispatch"
# Set by the worker, or by the batch as the worker would: compared as being set, not by value.
TIMES = ("enqueued_at", "started_at", "finished_at")


def _record(organizer, n: int):
    with transaction.atomic():
        return webhook_event_record(
            organizer_id=organizer.id,
            event_id=12,
            type="ticket.checked_in",
            data={"ticket": {"id": n}},
        )


def _worker_runs_one_task(worker_id: str = "worker-1") -> DBTaskResult:
    """What one turn of django-tasks' worker loop does: claim the next due task, run it."""
    worker = Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=worker_id,
        excluded_queue_names=[],
    )
    with exclusive_transaction():
        claimed = DBTaskResult.objects.ready().get_locked()
        claimed.claim(worker_id)
    worker.run_task(claimed)
    return claimed


def _row(task: DBTaskResult) -> dict:
    task.refresh_from_db()
    return {f.attname: getattr(task, f.attname) for f in DBTaskResult._meta.concrete_fields}


@pytest.mark.django_db
def test_a_task_finishes_the_tasks_it_ran_as_the_worker_finishes_its_own(manager, receiver):
    endpoint_for(receiver, manager)
    events = [_record(manager, n).pk for n in range(3)]

    own = _worker_runs_one_task()

    assert sorted(receiver.ids()) == sorted(events)
    assert WebhookDelivery.objects.filter(status="delivered").count() == 3
    tasks = DBTaskResult.objects.filter(task_path=DISPATCH)
    assert tasks.count() == 3
    expected = _row(own)
    assert expected["status"] == TaskResultStatus.SUCCESSFUL
    assert expected["worker_ids"] == ["worker-1"]
    for peer in tasks.exclude(pk=own.pk):
        row = _row(peer)
        assert {k: v for k, v in row.items() if k not in ("id", "args_kwargs", *TIMES)} == {
            k: v for k, v in expected.items() if k not in ("id", "args_kwargs", *TIMES)
        }
        assert row["enqueued_at"] <= row["started_at"] <= row["finished_at"]


@pytest.mark.django_db
@pytest.mark.parametrize("events", [2, 12])
def test_a_batch_costs_the_same_queries_whatever_its_events(events, manager, receiver):
    endpoint_for(receiver, manager)
    for n in range(events):
        _record(manager, n)

    with CaptureQueriesContext(connection) as queries:
        _worker_runs_one_task()

    assert len(receiver.requests) == events
    # The worker's claim (2), the others' (2), the events, their endpoints, the deliveries
    # inserted and read, locked, saved, the attempts, the others finished, the task finished;
    # the three transactions' savepoints (6).
    assert len(queries) == 19


@pytest.mark.django_db
def test_a_task_takes_on_at_most_a_batch(manager, receiver):
    endpoint_for(receiver, manager)
    for n in range(delivering.BATCH_EVENTS + 3):
        _record(manager, n)

    _worker_runs_one_task()

    tasks = DBTaskResult.objects.filter(task_path=DISPATCH)
    assert tasks.filter(status=TaskResultStatus.SUCCESSFUL).count() == delivering.BATCH_EVENTS
    assert tasks.filter(status=TaskResultStatus.READY, worker_ids=[]).count() == 3
    assert len(receiver.requests) == delivering.BATCH_EVENTS


@pytest.mark.django_db
def test_events_over_the_batchs_posts_are_left_to_their_own_tasks(manager, receiver, monkeypatch):
    """Two endpoints and room for three POSTs: the first event is sent, the second waits for
    its task, made READY again, with its deliveries created and never attempted."""
    endpoint_for(receiver, manager)
    endpoint_for(receiver, manager)
    first, second = _record(manager, 1), _record(manager, 2)
    monkeypatch.setattr(delivering, "BATCH_POSTS", 3)

    _worker_runs_one_task()

    assert receiver.ids() == {first.pk: 2}
    waiting = DBTaskResult.objects.get(status=TaskResultStatus.READY)
    assert waiting.args_kwargs["args"] == [second.pk]
    assert waiting.worker_ids == ["worker-1"]
    assert list(second.deliveries.values_list("attempt_count", flat=True)) == [0, 0]

    _worker_runs_one_task("worker-2")

    assert receiver.ids() == {first.pk: 2, second.pk: 2}
    assert WebhookDelivery.objects.filter(status="delivered").count() == 4
    assert WebhookAttempt.objects.count() == 4


@pytest.mark.django_db
def test_when_the_batch_raises_only_the_workers_own_task_fails(manager, receiver, monkeypatch):
    """The others are made READY again: a task that always fails takes none with it."""
    endpoint_for(receiver, manager)
    events = [_record(manager, n).pk for n in range(3)]
    monkeypatch.setattr(delivering, "_attempts_record", lambda attempts: 1 / 0)

    own = _worker_runs_one_task()

    own.refresh_from_db()
    assert own.status == TaskResultStatus.FAILED
    assert own.exception_class_path == "builtins.ZeroDivisionError"
    others = DBTaskResult.objects.exclude(pk=own.pk)
    assert [t.status for t in others] == [TaskResultStatus.READY] * 2
    monkeypatch.undo()

    _worker_runs_one_task("worker-2")

    assert [t.status for t in others.all()] == [TaskResultStatus.SUCCESSFUL] * 2
    # The failed run had posted all three; the others are posted again (deduplicated).
    assert receiver.ids() == {events[0]: 1, events[1]: 2, events[2]: 2}
    assert WebhookDelivery.objects.filter(status="delivered").count() == 2


@pytest.mark.django_db
def test_a_task_called_outside_a_worker_runs_alone(manager, receiver):
    endpoint_for(receiver, manager)
    first, _ = _record(manager, 1), _record(manager, 2)

    webhook_event_dispatch.call(first.pk)

    assert receiver.ids() == {first.pk: 1}
    assert DBTaskResult.objects.filter(status=TaskResultStatus.READY).count() == 2


def test_a_worker_killed_mid_batch_leaves_its_tasks_to_the_next(
    shared_database, manager, receiver, workers
):
    """The batch is claimed (RUNNING) and posted, its answers held: killed then, the worker
    has logged nothing; after the lease the next worker runs every task again and each event
    reaches the receiver (twice: it deduplicates by `webhook-id`)."""
    endpoint_for(receiver, manager)
    events = [_record(manager, n).pk for n in range(delivering.SENDERS)]  # all sent at once
    receiver.answering.clear()
    workers.lease_seconds = 3
    first = workers.start("first")
    wait_for(lambda: len(receiver.requests) == len(events), timeout=30, what="the batch's POSTs")
    running = DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING)
    assert running.count() == len(events)
    workers.kill(first)
    receiver.answering.set()
    assert WebhookAttempt.objects.count() == 0

    workers.start("second")

    tasks = DBTaskResult.objects.filter(task_path=DISPATCH)
    # The tasks are finished after the transaction that logs their deliveries: wait for both.
    wait_for(
        lambda: (
            WebhookDelivery.objects.filter(status="delivered").count() == len(events)
            and tasks.filter(status=TaskResultStatus.SUCCESSFUL).count() == len(events)
        ),
        timeout=60,
        what="every delivery, and every task finished",
        log=workers.log,
    )
    assert receiver.ids() == dict.fromkeys(events, 2)
    assert [t.status for t in tasks] == [TaskResultStatus.SUCCESSFUL] * len(events)
    assert [t.worker_ids for t in tasks] == [["first", "second"]] * len(events)
    assert WebhookAttempt.objects.count() == len(events)

"""One organizer's webhooks go out as fast as its receiver answers, oldest work first (issue
43): several of its tasks send at once, one per lane, within its cap across the workers; a
retry due goes before newer events; work that waited for a lane is not overtaken by newer
work. Real workers, a real receiver on 127.0.0.1, PostgreSQL (the lanes are advisory locks)."""

import threading
from contextlib import ExitStack
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult, get_date_max

from webhooks import delivering
from webhooks.models import WebhookDelivery
from webhooks.outbox import webhook_outbox_relay
from webhooks.queueing import QUEUE
from webhooks.services import webhook_event_record

from .helpers import endpoint_for, lanes_held_elsewhere, wait_for

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("private_urls_allowed"),
]
DISPATCH_TASK = "webhooks.tasks.webhook_events_dispatch"


def _record(organizer, n: int):
    with transaction.atomic():
        return webhook_event_record(
            organizer_id=organizer.id, event_id=1, type="ticket.created", data={"n": n}
        )


def _delivered(count: int):
    return lambda: WebhookDelivery.objects.filter(status="delivered").count() >= count


def test_one_organizers_events_go_out_many_at_once_within_its_cap_across_workers(
    manager, receiver, workers, settings
):
    """Two workers, 200 events of one organizer; the receiver holds its answers until as many
    attempts as the cap allows are in flight, then answers everything at once."""
    endpoint_for(receiver, manager)
    cap = settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER
    assert delivering.lanes() == (4, 4) and cap == 16
    receiver.answering.clear()
    events = [_record(manager, n).pk for n in range(200)]
    workers.start("first")
    workers.start("second")

    wait_for(lambda: receiver.in_flight >= cap, timeout=30, what="the cap", log=workers.log)
    receiver.answering.set()
    wait_for(_delivered(200), timeout=60, what="every event delivered", log=workers.log)

    assert receiver.most_in_flight == cap  # four tasks at once, none beyond the cap
    assert set(receiver.ids()) == set(events) and max(receiver.ids().values()) == 1


@pytest.fixture
def lanes_held(transactional_db):
    """Hold the organizer's lanes from this process (as another worker's tasks would) until
    the test sets the event it is given."""
    with ExitStack() as held:

        def hold(organizer_id: int) -> threading.Event:
            release = threading.Event()
            taken = held.enter_context(lanes_held_elsewhere(organizer_id, release))
            assert taken == delivering.lanes()[0]
            return release

        yield hold


def _ready_dispatches(*, timed: bool):
    """The dispatch tasks waiting: queued for a time (again), or without one (new work)."""
    ready = DBTaskResult.objects.filter(task_path=DISPATCH_TASK, status="READY")
    return (
        ready.exclude(run_after=get_date_max()) if timed else ready.filter(run_after=get_date_max())
    )


def test_work_that_waited_for_a_lane_goes_before_newer_events(
    manager, receiver, workers, lanes_held
):
    """The first event's dispatch runs while another worker holds the lanes (here, in this
    process): it waits in line, then is queued again; newer events are queued meanwhile. A
    worker running one task at a time then sends the first event first."""
    endpoint_for(receiver, manager)
    first = _record(manager, 0)
    webhook_outbox_relay()
    release = lanes_held(manager.id)
    [task] = DBTaskResult.objects.filter(task_path=DISPATCH_TASK)
    task.claim("test")
    task.task.call(*task.task_result.args, **task.task_result.kwargs)
    task.set_successful(None)
    [again] = _ready_dispatches(timed=True)
    newer = [_record(manager, n).pk for n in range(1, 6)]
    webhook_outbox_relay()
    assert _ready_dispatches(timed=False).exists()
    release.set()
    wait_for(lambda: timezone.now() >= again.run_after, timeout=5, what="its time")

    workers.start(threads=1)
    wait_for(_delivered(6), timeout=30, what="every event delivered", log=workers.log)

    order = [request["headers"]["webhook-id"] for request in receiver.requests]
    assert order[0] == first.pk
    assert sorted(order[1:]) == sorted(newer)


def test_a_retry_due_goes_before_newer_events(manager, receiver, workers):
    endpoint, _ = endpoint_for(receiver, manager)
    failed = _record(manager, 0)
    due = timezone.now()
    delivery = WebhookDelivery.objects.create(
        event=failed,
        endpoint=endpoint,
        pending_since=failed.created_at,
        next_attempt_at=due,
        attempt_count=1,
    )
    type(failed).objects.filter(pk=failed.pk).update(dispatched_at=due)
    QUEUE.deliver.using(run_after=due).enqueue(delivery.pk)
    newer = [_record(manager, n).pk for n in range(1, 41)]  # after the retry was due
    assert due < min(e.created_at for e in type(failed).objects.filter(pk__in=newer))

    workers.start(threads=1)
    wait_for(_delivered(41), timeout=30, what="every event delivered", log=workers.log)

    order = [request["headers"]["webhook-id"] for request in receiver.requests]
    assert order[0] == failed.pk
    assert sorted(order[1:]) == sorted(newer)
    delivery.refresh_from_db()
    assert delivery.attempt_count == 2
    assert delivery.delivered_at - due < timedelta(seconds=10)

"""The task queue as operators see it (`/healthz`, `manage.py task_queue`), and tasks whose
worker died."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from ticketing.task_queue import task_queue_status, tasks_requeue_abandoned
from tickets.services.import_jobs import import_job_run
from webhooks.models import WebhookDelivery
from webhooks.outbox import webhook_outbox_relay
from webhooks.services import webhook_event_record
from webhooks.tasks import webhook_deliver

from .helpers import endpoint_for, wait_for


def _task(**fields) -> DBTaskResult:
    """A queued delivery task whose row is then set to `fields` (a state, a time)."""
    result = webhook_deliver.enqueue(2147483647)  # no such delivery: running it does nothing
    DBTaskResult.objects.filter(pk=result.id).update(**fields)
    return DBTaskResult.objects.get(pk=result.id)


@pytest.fixture
def queue(db):
    now = timezone.now()
    _task(enqueued_at=now - timedelta(seconds=90))  # pending for 90 s
    _task(enqueued_at=now - timedelta(seconds=5))
    _task(run_after=now - timedelta(seconds=30))  # a retry due 30 s ago
    _task(run_after=now + timedelta(minutes=5))  # a retry not yet due
    _task(status=TaskResultStatus.RUNNING, started_at=now)
    _task(status=TaskResultStatus.FAILED, finished_at=now)
    _task(status=TaskResultStatus.SUCCESSFUL, finished_at=now)


def test_queue_status_counts_each_state_and_the_oldest_wait(queue):
    status = task_queue_status()
    assert (status.pending, status.scheduled, status.running, status.failed) == (3, 1, 1, 1)
    assert status.oldest_pending_seconds == pytest.approx(90, abs=5)


def test_queue_status_of_an_empty_queue(db):
    assert task_queue_status().as_dict() == {
        "pending": 0,
        "oldest_pending_seconds": None,
        "scheduled": 0,
        "running": 0,
        "failed": 0,
    }


def test_healthz_reports_the_queue(queue, client):
    body = client.get("/healthz").json()
    assert body["tasks"]["pending"] == 3
    assert body["tasks"]["failed"] == 1
    assert body["tasks"]["oldest_pending_seconds"] == pytest.approx(90, abs=5)


def test_task_queue_command_reports_the_queue(queue):
    out = StringIO()
    call_command("task_queue", "--json", stdout=out)
    figures = json.loads(out.getvalue())
    assert {k: v for k, v in figures.items() if k != "oldest_pending_seconds"} == {
        "pending": 3,
        "scheduled": 1,
        "running": 1,
        "failed": 1,
    }
    text = StringIO()
    call_command("task_queue", stdout=text)
    lines = text.getvalue().splitlines()
    assert lines[0].startswith("pending: 3 (oldest waiting 9") and lines[0].endswith(" s)")
    assert lines[1:] == ["scheduled: 1", "running: 1", "failed: 1"]


@pytest.mark.django_db
def test_only_tasks_running_past_the_lease_are_requeued():
    now = timezone.now()
    abandoned = _task(status=TaskResultStatus.RUNNING, started_at=now - timedelta(seconds=301))
    busy = _task(status=TaskResultStatus.RUNNING, started_at=now - timedelta(seconds=200))

    assert tasks_requeue_abandoned(lease_seconds=300) == 1

    abandoned.refresh_from_db()
    busy.refresh_from_db()
    assert (abandoned.status, busy.status) == (TaskResultStatus.READY, TaskResultStatus.RUNNING)


@pytest.mark.django_db
def test_a_long_task_is_requeued_only_past_its_own_lease(settings):
    """An admin import runs longer than a delivery: it is not started again beside itself."""
    assert import_job_run.module_path in settings.TASK_LEASE_SECONDS_BY_TASK
    now = timezone.now()
    result = import_job_run.enqueue(job="j", event_id=0, user_id=0, upload="u", confirm=False)
    DBTaskResult.objects.filter(pk=result.id).update(
        status=TaskResultStatus.RUNNING, started_at=now - timedelta(seconds=900)
    )
    settings.TASK_LEASE_SECONDS_BY_TASK = {import_job_run.module_path: 1800}
    assert tasks_requeue_abandoned(lease_seconds=300) == 0
    settings.TASK_LEASE_SECONDS_BY_TASK = {import_job_run.module_path: 600}
    assert tasks_requeue_abandoned(lease_seconds=300) == 1
    assert DBTaskResult.objects.get(pk=result.id).status == TaskResultStatus.READY


def test_a_worker_runs_again_a_task_its_dead_predecessor_left_running(
    shared_database, manager, receiver, workers, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint_for(receiver, manager)
    with transaction.atomic():
        event = webhook_event_record(
            organizer_id=manager.id, event_id=1, type="ticket.created", data={}
        )
    assert webhook_outbox_relay() == 1  # as a worker's relay queues its dispatch
    # As a worker killed mid-task leaves it: claimed, RUNNING, never finished.
    DBTaskResult.objects.update(
        status=TaskResultStatus.RUNNING,
        started_at=timezone.now() - timedelta(seconds=1),
        worker_ids=["dead"],
    )
    workers.lease_seconds = 3
    workers.start()

    wait_for(
        lambda: WebhookDelivery.objects.filter(status="delivered").exists(),
        timeout=30,
        what="the abandoned task to run again",
        log=workers.log,
    )
    assert receiver.ids() == {event.id: 1}
    dead, again = DBTaskResult.objects.get().worker_ids  # one of worker-1's threads
    assert (dead, again.rsplit("-", 1)[0]) == ("dead", "worker-1")

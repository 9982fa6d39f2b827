"""The background task queue (django-tasks' database backend): its state, and tasks whose
worker died.

The backend marks a task RUNNING when a worker claims it and never looks at it again, so a
worker killed mid-task (SIGKILL, a lost machine) would leave it RUNNING for ever
(django-tasks issue #46). Every task here finishes or gives up well within
`TASK_LEASE_SECONDS` (a webhook attempt or an email: 10 s), so one still RUNNING after that has
lost its worker and is made READY again: tasks are at least once, and written to be repeated.
A task that may run longer (an admin import) has a lease of its own
(`TASK_LEASE_SECONDS_BY_TASK`): run again while still running, it would find its upload taken.
"""

from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max


@dataclass(frozen=True)
class QueueStatus:
    pending: int  # due and waiting for a worker
    oldest_pending_seconds: float | None  # how long the oldest of those has waited
    scheduled: int  # waiting for their time (retries)
    running: int
    failed: int  # raised an exception (kept until pruned)

    def as_dict(self) -> dict:
        return asdict(self)


def task_queue_status() -> QueueStatus:
    """The queue in one query: a backlog shows as pending tasks and the age of the oldest."""
    now = timezone.now()
    undeferred = Q(status=TaskResultStatus.READY, run_after=get_date_max())
    deferred_due = Q(status=TaskResultStatus.READY, run_after__lte=now)
    figures = DBTaskResult.objects.aggregate(
        pending=Count("id", filter=undeferred | deferred_due),
        oldest_enqueued=Min("enqueued_at", filter=undeferred),
        oldest_due=Min("run_after", filter=deferred_due),
        scheduled=Count(
            "id",
            filter=Q(status=TaskResultStatus.READY, run_after__gt=now)
            & ~Q(run_after=get_date_max()),
        ),
        running=Count("id", filter=Q(status=TaskResultStatus.RUNNING)),
        failed=Count("id", filter=Q(status=TaskResultStatus.FAILED)),
    )
    waiting_since = [t for t in (figures["oldest_enqueued"], figures["oldest_due"]) if t]
    return QueueStatus(
        pending=figures["pending"],
        oldest_pending_seconds=(
            round(max((now - min(waiting_since)).total_seconds(), 0.0), 3)
            if waiting_since
            else None
        ),
        scheduled=figures["scheduled"],
        running=figures["running"],
        failed=figures["failed"],
    )


def tasks_requeue_abandoned(*, lease_seconds: int) -> int:
    """Make READY again the tasks RUNNING for longer than the lease (for a task path in
    TASK_LEASE_SECONDS_BY_TASK, its own); how many there were."""
    now = timezone.now()
    long_running = settings.TASK_LEASE_SECONDS_BY_TASK
    past_lease = Q(started_at__lt=now - timedelta(seconds=lease_seconds)) & ~Q(
        task_path__in=long_running
    )
    for task_path, seconds in long_running.items():
        past_lease |= Q(task_path=task_path, started_at__lt=now - timedelta(seconds=seconds))
    return DBTaskResult.objects.filter(past_lease, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.READY
    )


def tasks_give_back(*, ids: list) -> int:
    """Make READY again the tasks of `ids` still RUNNING: their worker is stopping before they
    finished (`manage.py run_worker`), and another runs them again; how many there were."""
    return DBTaskResult.objects.filter(pk__in=ids, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.READY
    )

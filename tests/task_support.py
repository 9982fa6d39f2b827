"""Running queued tasks in the test process, as `manage.py run_worker` would run them."""

from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max

from tickets.email_outbox import ticket_email_relay


def run_due_tasks(*, name_contains: str = "", limit: int = 100) -> int:
    """Run the tasks that are due, oldest first, including those they enqueue that are due;
    returns how many ran. A task that raises is marked failed, as by a worker. The emails asked
    for are handed to tasks first, as an email worker's relay does."""
    ran = 0
    while ran < limit:
        ticket_email_relay()
        due = DBTaskResult.objects.ready().filter(task_path__contains=name_contains)
        result = due.order_by("enqueued_at", "id").first()
        if result is None:
            return ran
        result.claim("test")
        task, task_result = result.task, result.task_result
        try:
            value = task.call(*task_result.args, **task_result.kwargs)
        except Exception as exc:  # recorded as a worker records it
            result.set_failed(exc)
        else:
            result.set_successful(value)
        ran += 1
    raise AssertionError(f"more than {limit} tasks due: a task that re-enqueues itself at once?")


def scheduled_tasks(*, name_contains: str = "") -> list[DBTaskResult]:
    """Tasks waiting for a later time (retries), soonest first."""
    return list(
        DBTaskResult.objects.filter(
            status=TaskResultStatus.READY,
            run_after__gt=timezone.now(),
            task_path__contains=name_contains,
        )
        .exclude(run_after=get_date_max())
        .order_by("run_after")
    )

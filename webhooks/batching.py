"""Running the due tasks of one kind together: how one webhook worker keeps up (issue 15).

django-tasks' worker claims one task at a time. A webhook task costs mostly fixed work per run
(claim and finish its row, a transaction to log its attempts, a round of POSTs), so the task the
worker is running also claims other due tasks of its own kind and does their work with its own
in one pass (`tasks_run_batched`). They are claimed as the worker claims one, with the same
query (due, READY, `SELECT ... FOR UPDATE SKIP LOCKED`; on SQLite in an exclusive transaction)
and the same column values, and committed RUNNING before any work: another worker skips them,
and if this one dies they are RUNNING past the lease and made READY again
(`ticketing.task_queue`), as the task it was running. Done, they are finished as the worker
finishes one; if the work raises, they are made READY again for another run, and only the
worker's own task fails (so a task that always fails cannot take others with it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar

from django.dispatch import receiver
from django.utils import timezone
from django_tasks import TaskResult, TaskResultStatus
from django_tasks.signals import task_finished, task_started
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import exclusive_transaction

# The task the worker of this thread is running, as its `task_started` signal told.
_running: ContextVar[TaskResult | None] = ContextVar("webhook_task_running", default=None)


@receiver(task_started, dispatch_uid="webhooks.batching.started")
def _task_started(sender, task_result: TaskResult, **kwargs) -> None:
    _running.set(task_result)


@receiver(task_finished, dispatch_uid="webhooks.batching.finished")
def _task_finished(sender, task_result: TaskResult, **kwargs) -> None:
    running = _running.get()
    if running is not None and running.id == task_result.id:
        _running.set(None)


def tasks_run_batched(
    *,
    args: Sequence,
    run: Callable[[list[Sequence]], set[int]],
    size: int,
) -> None:
    """Run this task (its `args`) with up to `size - 1` other due tasks of its kind: `run` gets
    their argument lists, this task's first, and returns the positions of those it left
    undone (never 0), whose tasks are made READY again.

    Outside a worker (a task called directly, or run by a test helper) it runs alone.
    """
    running = _running.get()
    peers = _peers_claim(running, limit=size - 1) if running is not None and size > 1 else []
    _running.set(running)  # the peers' `task_started` signals do not make them the one running
    try:
        undone = run([list(args), *[peer.args_kwargs["args"] for peer in peers]])
    except BaseException:
        _peers_release(peers)
        raise
    assert 0 not in undone, "the running task's own work is never left undone"
    _peers_release([peer for n, peer in enumerate(peers, start=1) if n in undone])
    _peers_finish([peer for n, peer in enumerate(peers, start=1) if n not in undone])


def _peers_claim(running: TaskResult, *, limit: int) -> list[DBTaskResult]:
    """Claim due tasks of the running task's kind (path, queue, backend), in the worker's
    order, as `DBTaskResult.claim` does for the worker's own: RUNNING, `started_at` now, the
    worker's id appended to `worker_ids`. Committed before returning."""
    task = running.task
    worker_id = running.worker_ids[-1]
    due = DBTaskResult.objects.ready().filter(
        backend_name=running.backend, queue_name=task.queue_name, task_path=task.module_path
    )
    with exclusive_transaction(due.db):
        peers = list(due.select_for_update(skip_locked=True)[:limit])
        now = timezone.now()
        by_worker_ids: dict[tuple, list[DBTaskResult]] = {}
        for peer in peers:
            peer.status, peer.started_at = TaskResultStatus.RUNNING, now
            peer.worker_ids = [*peer.worker_ids, worker_id]
            by_worker_ids.setdefault(tuple(peer.worker_ids), []).append(peer)
        for worker_ids, group in by_worker_ids.items():  # one UPDATE: few were run before
            DBTaskResult.objects.filter(pk__in=[p.pk for p in group]).update(
                status=TaskResultStatus.RUNNING, started_at=now, worker_ids=list(worker_ids)
            )
    for peer in peers:
        task_started.send(sender=type(task.get_backend()), task_result=peer.task_result)
    return peers


def _peers_finish(peers: list[DBTaskResult]) -> None:
    """Finish them as `DBTaskResult.set_successful(None)` finishes the worker's own task."""
    if not peers:
        return
    now = timezone.now()
    fields = {
        "status": TaskResultStatus.SUCCESSFUL,
        "finished_at": now,
        "return_value": None,
        "exception_class_path": "",
        "traceback": "",
    }
    DBTaskResult.objects.filter(pk__in=[peer.pk for peer in peers]).update(**fields)
    for peer in peers:
        for name, value in fields.items():
            setattr(peer, name, value)
        task_finished.send(sender=type(peer.task.get_backend()), task_result=peer.task_result)


def _peers_release(peers: list[DBTaskResult]) -> None:
    """Make them READY again, as the requeue of abandoned tasks does, for another run."""
    if peers:
        DBTaskResult.objects.filter(
            pk__in=[peer.pk for peer in peers], status=TaskResultStatus.RUNNING
        ).update(status=TaskResultStatus.READY)

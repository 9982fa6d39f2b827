"""`manage.py run_worker`: django-tasks' `db_worker`, plus the requeue of abandoned tasks.

Run as many as needed, on any machines sharing the database: each claims one task at a time
with `SELECT ... FOR UPDATE SKIP LOCKED` (on SQLite, inside an exclusive transaction), so no
two run the same task. Every `TASK_LEASE_SECONDS / 4` a thread makes READY again the tasks a
dead worker left RUNNING (`ticketing.task_queue`).

Deployments run workers per queue (`--queue-name email`, `webhooks`, `default`: settings
`TASKS`), so that a task waiting on a hung mail server or receiver holds only its own queue.
Without `--queue-name` a worker takes every queue: one process does all the work.
"""

import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from ticketing.task_queue import tasks_requeue_abandoned

logger = logging.getLogger("ticketing.task_queue")


def _requeue_abandoned_forever(lease_seconds: int) -> None:
    while True:
        try:
            requeued = tasks_requeue_abandoned(lease_seconds=lease_seconds)
            if requeued:
                logger.warning("requeued %d tasks whose worker stopped mid-task", requeued)
        except DatabaseError as exc:
            logger.warning("could not requeue abandoned tasks (%s)", exc.__class__.__name__)
        finally:
            connection.close()  # this thread's own connection; never held while sleeping
        time.sleep(max(lease_seconds / 4, 0.5))


class Command(DbWorkerCommand):
    help = (
        "Run a background task worker (django-tasks' db_worker) that also requeues tasks "
        "left RUNNING by a worker that died."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(queue_name="*")

    def handle(self, *args, **options):
        threading.Thread(
            target=_requeue_abandoned_forever,
            args=(settings.TASK_LEASE_SECONDS,),
            name="requeue-abandoned-tasks",
            daemon=True,
        ).start()
        super().handle(*args, **options)

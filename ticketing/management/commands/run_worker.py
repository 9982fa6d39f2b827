"""`manage.py run_worker`: django-tasks' `db_worker`, run on several threads, with the requeue of
abandoned tasks and the outboxes' relays (webhook events, ticket emails).

Run as many as needed, on any machines sharing the database: each thread is django-tasks-db's
own `Worker`, which claims one task at a time with `SELECT ... FOR UPDATE SKIP LOCKED` (on
SQLite, inside an exclusive transaction), so no two run the same task. Every
`TASK_LEASE_SECONDS / 4` a thread makes READY again the tasks a dead worker left RUNNING
(`ticketing.task_queue`: django-tasks-db 0.13 does not).

Deployments run workers per queue (`--queue-name email`, `webhooks`, `default`: settings
`TASKS`), so that a task waiting on a hung mail server or receiver holds only its own queue.
Without `--queue-name` a worker takes every queue: one process does all the work.

An app may ask for more for the workers of its queue, on its AppConfig (`task_queue`): tasks
run at once on threads (`task_worker_threads()`, or `--threads`), and a loop on a thread of its
own beside them (`task_worker_loop(stop=...)`). The webhooks queue runs WEBHOOK_WORKER_THREADS
tasks at once, so that receivers that hang hold only some threads (their organizer's share), and
the webhook outbox's relay: every worker that sends webhooks also dispatches them, with no other
process to deploy, and the relays of several workers share the outbox's rows (SKIP LOCKED).
The email queue's workers relay the ticket emails' outbox the same way. A worker of several
queues runs the most threads any of them asks for.

Stopping (SIGTERM, SIGINT, SIGQUIT), for every queue: the worker takes no new task and lets the
running ones finish for up to `TASK_STOP_SECONDS`; then, or at a second signal (Ctrl-C beside a
supervisor's TERM), it gives the tasks still running back to the queue (READY: another worker
runs them again, as after a lease) and exits. A task is never marked failed for being stopped.
"""

import logging
import os
import signal
import threading
import time

from django.apps import apps
from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand
from django_tasks_db.management.commands.db_worker import Worker

from ticketing.task_queue import tasks_give_back, tasks_requeue_abandoned

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


def _daemon(target, name: str, **kwargs) -> None:
    threading.Thread(target=target, kwargs=kwargs, name=name, daemon=True).start()


class _TrackedWorker(Worker):
    """django-tasks-db's worker, knowing the task it runs, so that a stop can give it back."""

    running_task_id = None

    def run_task(self, db_task_result) -> None:
        self.running_task_id = db_task_result.pk
        try:
            super().run_task(db_task_result)
        finally:
            self.running_task_id = None


class Command(DbWorkerCommand):
    help = (
        "Run a background task worker (django-tasks' db_worker) on several threads, that also "
        "requeues tasks left RUNNING by a worker that died and relays the outboxes of webhook "
        "events and ticket emails."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(queue_name="*")
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="Tasks run at once (default: WEBHOOK_WORKER_THREADS with the webhooks queue, "
            "else 1).",
        )

    def handle(self, *args, threads=None, **options):
        if settings.DB_TRANSACTION_POOLER:
            # The webhook worker's per-organizer slots are session advisory locks: through a
            # pooler in transaction mode they leak onto other clients' connections and the
            # cap breaks (more in flight than allowed, then none at all).
            raise CommandError(
                "DB_TRANSACTION_POOLER is on: task workers need a session connection. Point "
                "their DATABASE_URL at PostgreSQL itself (or a pool in session mode) and leave "
                "DB_TRANSACTION_POOLER unset for them."
            )
        _daemon(
            _requeue_abandoned_forever,
            "requeue-abandoned-tasks",
            lease_seconds=settings.TASK_LEASE_SECONDS,
        )
        queues = options["queue_name"].split(",")
        stopping = threading.Event()
        wanted = [1]
        for config in apps.get_app_configs():
            queue = getattr(config, "task_queue", None)
            if queue is None or not ("*" in queues or queue in queues):
                continue
            _daemon(config.task_worker_loop, f"{queue}-worker-loop", stop=stopping.is_set)
            wanted.append(config.task_worker_threads())
        self.configure_logging(options["verbosity"])
        self._run_threads(threads or max(wanted), queues, stopping, options)

    def _run_threads(self, count: int, queues: list[str], stopping, options) -> None:
        """`count` of django-tasks-db's workers on threads of this process, stopped as the
        module says."""
        excluded = options["exclude_queues"].split(",") if options["exclude_queues"] else []
        base_id = options["worker_id"]
        workers = [
            _TrackedWorker(
                queue_names=queues,
                interval=options["interval"],
                batch=options["batch"],
                backend_name=options["backend_name"],
                startup_delay=options["startup_delay"],
                max_tasks=options["max_tasks"],
                worker_id=base_id if count == 1 else f"{base_id[:58]}-{n}",
                excluded_queue_names=excluded,
            )
            for n in range(count)
        ]

        def give_back_and_exit(why: str) -> None:
            running = [w.running_task_id for w in workers if w.running_task_id is not None]
            given = tasks_give_back(ids=running) if running else 0
            logger.warning("%s: %d running tasks given back to the queue", why, given)
            logging.shutdown()
            os._exit(0)  # the tasks' threads are mid-work: they must not record an outcome

        def shutdown(signum, frame):
            if stopping.is_set():
                give_back_and_exit(f"{signal.strsignal(signum)} again")
            seconds = settings.TASK_STOP_SECONDS
            logger.warning(
                "%s: finishing the tasks running (up to %s s)", signal.strsignal(signum), seconds
            )
            stopping.set()
            for worker in workers:
                worker.running = False
            why = f"still running after {seconds} s"
            late = threading.Timer(seconds, give_back_and_exit, [why])
            late.daemon = True
            late.start()

        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
                signal.signal(signum, shutdown)
        running = [
            threading.Thread(target=worker.run, name=f"task-worker-{n}")
            for n, worker in enumerate(workers)
        ]
        for thread in running:
            thread.start()
        for thread in running:
            while thread.is_alive():
                thread.join(timeout=0.5)

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
"""

import logging
import os
import signal
import threading
import time

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand
from django_tasks_db.management.commands.db_worker import Worker

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


def _daemon(target, name: str, **kwargs) -> None:
    threading.Thread(target=target, kwargs=kwargs, name=name, daemon=True).start()


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
        threads = threads or max(wanted)
        if (threads or 1) <= 1:
            return super().handle(*args, **options)
        self.configure_logging(options["verbosity"])
        self._run_threads(threads, queues, stopping, options)

    def _run_threads(self, count: int, queues: list[str], stopping, options) -> None:
        """`count` of django-tasks-db's workers on threads of this process; a first SIGINT or
        SIGTERM lets each finish its task, a second ends the process at once."""
        excluded = options["exclude_queues"].split(",") if options["exclude_queues"] else []
        workers = [
            Worker(
                queue_names=queues,
                interval=options["interval"],
                batch=options["batch"],
                backend_name=options["backend_name"],
                startup_delay=options["startup_delay"],
                max_tasks=options["max_tasks"],
                worker_id=f"{options['worker_id'][:58]}-{n}",
                excluded_queue_names=excluded,
            )
            for n in range(count)
        ]

        def shutdown(signum, frame):
            if stopping.is_set():  # the second: as if no handler were set
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
            logger.warning("%s: finishing the tasks running", signal.strsignal(signum))
            stopping.set()
            for worker in workers:
                worker.running = False

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

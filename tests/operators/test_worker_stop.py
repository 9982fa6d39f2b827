"""A worker told to stop loses nothing (issue 40): it takes no new task, lets the running ones
finish for up to TASK_STOP_SECONDS, then (or at a second signal, as Ctrl-C beside a supervisor's
TERM sends) gives them back to the queue, for every queue. A task is never failed by a stop."""

import signal
import subprocess

import pytest
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.factories import TicketFactory
from tests.oauth.support import PYTHON, server_env
from tests.smtp_server import SmtpServer
from tests.webhooks.helpers import wait_for
from tickets.email_outbox import ticket_emails_queue
from tickets.email_status import TicketEmail
from tickets.tasks import ticket_email_send

from .queue_tasks import task_hold
from .test_queues import ROOT, QueueWorkers


@pytest.fixture
def queue_workers(shared_database, tmp_path):
    workers = QueueWorkers(tmp_path)
    yield workers
    workers.stop_all()


def _status(result) -> str:
    return DBTaskResult.objects.get(pk=result.id).status


def _held(tmp_path, queue_workers, env, *, stop_seconds: int):
    """A worker of the default queue running `task_hold`, which waits for a file `go`."""
    folder = tmp_path / "held"
    folder.mkdir()
    result = task_hold.enqueue(str(folder))
    worker = queue_workers.start(
        "default", "first", {**env, "TASK_STOP_SECONDS": str(stop_seconds)}
    )
    wait_for(
        lambda: list(folder.glob("run-1-*")),
        timeout=60,
        what="the worker to start the task",
        log=queue_workers.log,
    )
    return folder, result, worker


def test_a_stopped_worker_lets_its_task_finish(shared_database, queue_workers, tmp_path):
    env = server_env(DATABASE_URL=shared_database)
    folder, result, worker = _held(tmp_path, queue_workers, env, stop_seconds=120)

    worker.send_signal(signal.SIGTERM)
    assert worker.poll() is None  # still at its task
    (folder / "go").touch()

    assert worker.wait(timeout=60) == 0
    assert _status(result) == TaskResultStatus.SUCCESSFUL


def test_a_task_still_running_when_the_stop_is_due_goes_back_to_the_queue(
    shared_database, queue_workers, tmp_path
):
    env = server_env(DATABASE_URL=shared_database)
    folder, result, worker = _held(tmp_path, queue_workers, env, stop_seconds=1)

    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0
    assert _status(result) == TaskResultStatus.READY  # not failed, not left running

    (folder / "go").touch()
    queue_workers.start("default", "second", env)
    wait_for(
        lambda: _status(result) == TaskResultStatus.SUCCESSFUL,
        timeout=60,
        what="another worker to run the task again",
        log=queue_workers.log,
    )
    assert DBTaskResult.objects.get(pk=result.id).worker_ids == ["first", "second"]


def test_a_second_signal_gives_the_task_back_at_once(shared_database, queue_workers, tmp_path):
    """Ctrl-C reaches the whole process group and the supervisor's trap sends TERM too."""
    env = server_env(DATABASE_URL=shared_database)
    _, result, worker = _held(tmp_path, queue_workers, env, stop_seconds=600)

    worker.send_signal(signal.SIGINT)
    worker.send_signal(signal.SIGTERM)

    assert worker.wait(timeout=60) == 0
    assert _status(result) == TaskResultStatus.READY


def test_an_email_stuck_on_a_hung_mail_server_is_sent_by_the_next_worker(
    shared_database, queue_workers, settings
):
    ticket = TicketFactory(email="holder@example.com")
    ticket_emails_queue([ticket])  # as the creation asks for it: the worker's relay sends it
    mail = {
        "DJANGO_SETTINGS_MODULE": "ticketing.settings.production",
        "SECRET_KEY": settings.SECRET_KEY,
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_TIMEOUT": "60",
        "TASK_STOP_SECONDS": "1",
    }
    with SmtpServer(answering=False) as hung:
        env = server_env(DATABASE_URL=shared_database, EMAIL_PORT=str(hung.port), **mail)
        worker = queue_workers.start("email", "first", env)
        wait_for(lambda: hung.connections == 1, timeout=60, what="the worker to connect")
        result = DBTaskResult.objects.get(task_path=ticket_email_send.module_path)

        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
        assert _status(result) == TaskResultStatus.READY

    with SmtpServer(answering=True) as answering:
        env = server_env(DATABASE_URL=shared_database, EMAIL_PORT=str(answering.port), **mail)
        queue_workers.start("email", "second", env)
        wait_for(
            lambda: _status(result) == TaskResultStatus.SUCCESSFUL,
            timeout=60,
            what="the next worker to send the email",
            log=queue_workers.log,
        )
        assert len(answering.messages) == 1
    assert TicketEmail.objects.get(ticket=ticket).status == TicketEmail.Status.SENT


def test_a_worker_refuses_to_start_behind_a_transaction_pooler():
    """Its webhook slots are session advisory locks, which a transaction pooler breaks."""
    result = subprocess.run(
        [PYTHON, "manage.py", "run_worker", "--no-reload", "--queue-name", "webhooks"],
        cwd=ROOT,
        env=server_env(DB_TRANSACTION_POOLER="true"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "CommandError: DB_TRANSACTION_POOLER is on: task workers need a session connection. "
        "Point their DATABASE_URL at PostgreSQL itself (or a pool in session mode) and leave "
        "DB_TRANSACTION_POOLER unset for them."
    )

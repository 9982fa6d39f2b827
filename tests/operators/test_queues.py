"""Background work on three queues, each with workers of its own (issue 28): a mail server that
never answers holds the email worker, never a webhook; several workers on one database run
each task once (SQLite too); a task whose worker was killed mid-task runs again on another."""

import importlib
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.db import transaction
from django_tasks import TaskResultStatus
from django_tasks.base import Task
from django_tasks_db.models import DBTaskResult

from tests.factories import TicketFactory
from tests.oauth.support import PYTHON, server_env
from tests.smtp_server import SmtpServer
from tests.webhooks.helpers import endpoint_for, wait_for
from tickets.tasks import ticket_email_send
from webhooks.services import webhook_event_record

from .queue_tasks import task_echo, task_hold

ROOT = Path(settings.BASE_DIR)

# What each task of the project runs on; a new task fails this list until it says.
DECLARED_QUEUES = {
    "tickets.tasks.ticket_email_send": "email",
    "tickets.services.import_jobs.import_job_run": "default",
    "webhooks.tasks.webhook_endpoint_disabled_email": "email",
    "webhooks.tasks.webhook_event_dispatch": "webhooks",
    "webhooks.tasks.webhook_events_dispatch": "webhooks",
    "webhooks.tasks.webhook_deliver": "webhooks",
    "tickets.services.publishing.ticket_checked_in_publish": "webhooks",
}
QUEUES = {"email", "webhooks", "default"}


def _project_tasks() -> dict[str, str]:
    """Every task defined in the project's apps, found in their source: {path: queue}."""
    apps = [name for name in settings.INSTALLED_APPS if (ROOT / name / "__init__.py").exists()]
    found = {}
    for app in apps:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or "django_tasks import" not in path.read_text():
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for value in vars(importlib.import_module(name)).values():
                if isinstance(value, Task) and value.module_path.startswith(name + "."):
                    found[value.module_path] = value.queue_name
    return found


def test_every_task_runs_on_its_declared_queue():
    assert _project_tasks() == DECLARED_QUEUES
    assert set(settings.TASKS["default"]["QUEUES"]) == QUEUES


def test_the_procfile_and_the_compose_file_run_workers_for_every_queue():
    procfile = (ROOT / "deploy" / "Procfile").read_text()
    workers = dict(re.findall(r"^([\w-]+): .*\brun_worker\b.*--queue-name (\w+)$", procfile, re.M))
    assert workers == {"worker-email": "email", "worker-webhooks": "webhooks", "worker": "default"}

    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    services = {
        name: service["command"][service["command"].index("--queue-name") + 1]
        for name, service in compose["services"].items()
        if "run_worker" in service.get("command", [])
    }
    assert services == workers


def test_make_run_starts_a_worker_for_every_queue_beside_the_server():
    dry_run = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert re.findall(r"for queue in ([\w ]+);", dry_run) == ["email webhooks default"]
    assert "run_worker --no-reload --queue-name $queue &" in dry_run
    assert "runserver" in dry_run


class QueueWorkers:
    """`manage.py run_worker` processes, each on the queues it is given, stopped at the end."""

    def __init__(self, tmp_path: Path):
        self.log = tmp_path / "workers.log"
        self.processes: list[subprocess.Popen] = []

    def start(self, queue: str, worker_id: str, env: dict[str, str]) -> subprocess.Popen:
        with open(self.log, "ab") as out:
            process = subprocess.Popen(
                [PYTHON, "manage.py", "run_worker", "--no-reload", "--no-startup-delay",
                 "--interval", "0.1", "--queue-name", queue, "--worker-id", worker_id],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


@pytest.fixture
def queue_workers(shared_database, tmp_path):
    workers = QueueWorkers(tmp_path)
    yield workers
    workers.stop_all()


def _rows(task: Task):
    return DBTaskResult.objects.filter(task_path=task.module_path)


def test_several_workers_on_one_database_run_each_task_once(
    shared_database, queue_workers, tmp_path
):
    """On SQLite each worker claims inside an exclusive transaction; on PostgreSQL with
    `SKIP LOCKED`: three workers hold a task each at once, and 100 more run once each."""
    held = [tmp_path / f"held-{n}" for n in range(3)]
    for folder in held:
        folder.mkdir()
        task_hold.enqueue(str(folder))
    for n in range(100):
        task_echo.enqueue(n)
    env = server_env(DATABASE_URL=shared_database)
    for worker_id in ("one", "two", "three"):
        queue_workers.start("default", worker_id, env)

    wait_for(
        lambda: _rows(task_hold).filter(status=TaskResultStatus.RUNNING).count() == 3,
        timeout=60,
        what="each worker to hold a task",
        log=queue_workers.log,
    )
    holders = _rows(task_hold).values_list("worker_ids", flat=True)
    assert sorted(worker for ids in holders for worker in ids) == ["one", "three", "two"]
    for folder in held:
        (folder / "go").touch()

    wait_for(
        lambda: DBTaskResult.objects.filter(status=TaskResultStatus.SUCCESSFUL).count() == 103,
        timeout=60,
        what="every task to finish",
        log=queue_workers.log,
    )
    assert [len(ids) for ids in DBTaskResult.objects.values_list("worker_ids", flat=True)] == [
        1
    ] * 103
    assert sorted(_rows(task_echo).values_list("return_value", flat=True)) == list(range(100))
    assert [len(list(folder.glob("run-*"))) for folder in held] == [1, 1, 1]


def test_a_webhook_is_delivered_within_5_s_while_the_mail_server_never_answers(
    shared_database, queue_workers, receiver, manager, settings
):
    """One worker per queue, as deployed: the email worker waits on a mail server that accepts
    and never answers (up to EMAIL_TIMEOUT, here 30 s) while the webhook worker delivers."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint_for(receiver, manager)
    ticket = TicketFactory(event__organizer=manager)

    def record(n: int):
        with transaction.atomic():
            return webhook_event_record(
                organizer_id=manager.id, event_id=ticket.event_id, type="ticket.created",
                data={"ticket": {"id": n}},
            )  # fmt: skip

    with SmtpServer(answering=False) as smtp:
        env = server_env(
            DJANGO_SETTINGS_MODULE="ticketing.settings.production",
            DATABASE_URL=shared_database,
            SECRET_KEY=settings.SECRET_KEY,
            WEBHOOK_SECRET_KEY=",".join(settings.WEBHOOK_SECRET_KEYS),
            WEBHOOK_ALLOW_PRIVATE_URLS="true",
            EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
            EMAIL_HOST="127.0.0.1",
            EMAIL_PORT=str(smtp.port),
            EMAIL_TIMEOUT="30",
        )
        for queue in ("email", "webhooks", "default"):
            queue_workers.start(queue, f"worker-{queue}", env)
        warm_up = record(1)  # every worker is up once this is delivered
        wait_for(
            lambda: warm_up.id in receiver.ids(),
            timeout=60,
            what="the first webhook",
            log=queue_workers.log,
        )

        email = ticket_email_send.enqueue(ticket.pk)
        wait_for(lambda: smtp.connections == 1, timeout=30, what="the email worker to connect")
        event = record(2)
        recorded = time.monotonic()
        wait_for(
            lambda: event.id in receiver.ids(),
            timeout=5,
            what="the webhook while the mail server hangs",
            log=queue_workers.log,
        )
        delivered_in = time.monotonic() - recorded
        # Still waiting on the mail server: the webhook did not wait behind it.
        assert DBTaskResult.objects.get(pk=email.id).status == TaskResultStatus.RUNNING
        print(f"\nwebhook delivered in {delivered_in:.2f} s while the email worker waited")
    assert delivered_in < 5


def test_a_task_whose_worker_was_killed_mid_task_runs_again_on_another(
    shared_database, queue_workers, tmp_path
):
    """The lease path with a real SIGKILL: the task stays RUNNING with no worker until it is
    `TASK_LEASE_SECONDS` old, then a live worker's requeue makes it READY and a worker runs it."""
    folder = tmp_path / "held"
    folder.mkdir()
    result = task_hold.enqueue(str(folder))
    env = server_env(DATABASE_URL=shared_database)
    first = queue_workers.start("default", "first", {**env, "TASK_LEASE_SECONDS": "600"})
    wait_for(
        lambda: list(folder.glob("run-1-*")),
        timeout=60,
        what="the first worker to start the task",
        log=queue_workers.log,
    )
    row = DBTaskResult.objects.get(pk=result.id)
    assert (row.status, row.worker_ids) == (TaskResultStatus.RUNNING, ["first"])

    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    (folder / "go").touch()
    queue_workers.start("default", "second", {**env, "TASK_LEASE_SECONDS": "2"})

    wait_for(
        lambda: DBTaskResult.objects.get(pk=result.id).status == TaskResultStatus.SUCCESSFUL,
        timeout=60,
        what="the task to run again",
        log=queue_workers.log,
    )
    row.refresh_from_db()
    assert row.worker_ids == ["first", "second"]
    assert sorted(p.name.split("-")[1] for p in folder.glob("run-*")) == ["1", "2"]

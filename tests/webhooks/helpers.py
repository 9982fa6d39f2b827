"""Webhook test helpers: a real receiver on 127.0.0.1, real worker processes, and a database
both can reach (fixtures, re-exported by this package's conftest)."""

import json
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections
from django.db.utils import load_backend

from tests.factories import MembershipFactory, OrganizerFactory, UserFactory
from tests.oauth.support import PYTHON, database_url, server_env
from webhooks.services import webhook_endpoint_create


def wait_for(condition, *, timeout: float, what: str, log: Path | None = None):
    """Poll `condition` until it returns a true value; fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            tail = f"\nworker log:\n{log.read_text()[-3000:]}" if log and log.exists() else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}{tail}")
        time.sleep(0.05)


class _Server(ThreadingHTTPServer):
    # Workers post a batch at once, each POST on a connection of its own (HTTP/1.0): the
    # default backlog of 5 would reset some of them, as a real receiver would not.
    request_queue_size = 128


class Receiver:
    """An HTTP server that records every POST and answers with scripted statuses (then 200).

    `unique` keeps the first request of each `webhook-id`, as a receiver that deduplicates.
    Clearing `answering` holds every answer (the request is recorded) until it is set again.
    `in_flight` counts the requests received and not yet answered; `most_in_flight`, the most
    there were at once.
    """

    def __init__(self):
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()
        self.answering = threading.Event()
        self.answering.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:
                    return  # the sender died mid-request (a killed worker): nothing received
                with receiver.lock:
                    receiver.requests.append(
                        {"headers": dict(self.headers), "body": body.decode(), "path": self.path}
                    )
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.in_flight += 1
                    receiver.most_in_flight = max(receiver.most_in_flight, receiver.in_flight)
                receiver.answering.wait(timeout=60)
                with receiver.lock:
                    receiver.in_flight -= 1
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def ids(self) -> Counter:
        with self.lock:
            return Counter(r["headers"]["webhook-id"] for r in self.requests)

    def unique(self) -> dict[str, dict]:
        with self.lock:
            first: dict[str, dict] = {}
            for request in self.requests:
                first.setdefault(request["headers"]["webhook-id"], request)
            return first

    def bodies(self) -> list[dict]:
        with self.lock:
            return [json.loads(r["body"]) for r in self.requests]


@pytest.fixture
def receiver():
    receiver = Receiver()
    receiver.thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


@contextmanager
def _sqlite_file_database(path: Path):
    """This thread's default connection moved to a file holding the test database's schema.

    The suite's SQLite test database lives in memory, which another process cannot open.
    """
    memory = connections["default"]
    memory.ensure_connection()
    with sqlite3.connect(path) as target:
        memory.connection.backup(target)
    settings_dict = {**memory.settings_dict, "NAME": str(path)}
    on_file = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, "default")
    connections["default"] = on_file
    try:
        yield f"sqlite:///{path}"
    finally:
        on_file.close()
        connections["default"] = memory


@pytest.fixture
def shared_database(transactional_db, tmp_path):
    """A database URL that worker processes share with this test (PostgreSQL or SQLite)."""
    if connections["default"].vendor == "postgresql":
        yield database_url()
        return
    with _sqlite_file_database(tmp_path / "db.sqlite3") as url:
        yield url


@pytest.fixture
def private_urls_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True


class Workers:
    """`manage.py run_worker` processes on the shared database, stopped at the end.

    Their lease is long unless a test shortens it: a task it outlives would run twice.
    """

    def __init__(self, database: str, tmp_path: Path):
        self.env = server_env(
            DATABASE_URL=database,
            WEBHOOK_ALLOW_PRIVATE_URLS="true",
            WEBHOOK_RETRY_BASE_SECONDS="1",
        )
        self.lease_seconds = 120
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen] = []
        self.log = tmp_path / "worker.log"

    def start(self, worker_id: str = "worker-1", *, threads: int | None = None) -> subprocess.Popen:
        """A worker; with `threads`, running that many tasks at once (`run_worker --threads`)."""
        with open(self.log, "ab") as out:
            process = subprocess.Popen(
                [
                    PYTHON,
                    "manage.py",
                    "run_worker",
                    "--no-reload",
                    "--no-startup-delay",
                    "--interval",
                    "0.1",
                    "--worker-id",
                    worker_id,
                    *(["--threads", str(threads)] if threads else []),
                ],
                cwd=settings.BASE_DIR,
                env={**self.env, "TASK_LEASE_SECONDS": str(self.lease_seconds)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

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
def workers(shared_database, tmp_path):
    workers = Workers(shared_database, tmp_path)
    yield workers
    workers.stop_all()


@pytest.fixture
def manager():
    """An organizer and its owner (who has an email)."""
    organizer = OrganizerFactory(name="Bangkok Live", slug="bangkok-live")
    owner = UserFactory(username="owner", email="owner@example.com")
    MembershipFactory(user=owner, organizer=organizer, role="owner")
    return organizer


def endpoint_for(receiver: Receiver, organizer, event_types=("*",)):
    """An endpoint of `organizer` at the receiver, with its secret."""
    return webhook_endpoint_create(
        organizer_id=organizer.id, url=receiver.url, event_types=list(event_types)
    )


@contextmanager
def lanes_held_elsewhere(organizer_id: int, release: threading.Event | None = None):
    """The organizer's lanes held by another thread (its own database connection), as by
    another worker's tasks, until `release` is set (by the test, or on leaving); yields how
    many it took."""
    from django.db import connection

    from webhooks import delivering
    from webhooks.statements import organizer_slots

    taken, release = [], release or threading.Event()
    lanes = delivering.lanes()[0]

    def hold():
        try:
            with organizer_slots(organizer_id=organizer_id, want=lanes, cap=lanes) as n:
                taken.append(n)
                release.wait(timeout=60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    wait_for(lambda: taken, timeout=10, what="the lanes taken")
    try:
        yield taken[0]
    finally:
        release.set()
        holder.join()

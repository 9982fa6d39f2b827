"""deploy/gunicorn.conf.py's workers under TERM and HUP: a request a worker holds is answered,
a stopped server takes no new connection, and a reloaded one answers new requests while the old
worker still finishes its own. Real gunicorn processes, serving tests/topology/held_app.py."""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .stack import ROOT, WAIT, Stack

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


class Server:
    def __init__(self, directory: Path):
        self.held = directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {
            **{k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
            "DJANGO_SETTINGS_MODULE": "ticketing.settings.production",
            "SECRET_KEY": "gunicorn-signals-" * 4,
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",
            "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            "EMAIL_FILE_PATH": str(directory / "mail"),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "WEB_CONCURRENCY": "1",
            "HELD_DIR": str(directory),
            "LOG_LEVEL": "WARNING",
        }
        self.log = (directory / "gunicorn.log").open("w")
        command = ["-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"]
        self.process = subprocess.Popen(
            [sys.executable, *command, "tests.topology.held_app:application"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.pool = ThreadPoolExecutor(max_workers=4)
        Stack.wait_for(lambda: self.get("/") is not None)

    def get(self, path: str):
        """(status, the answering worker's pid), or None when nothing answered."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, int(response.read())
        except OSError:
            return None
        finally:
            conn.close()

    def hold(self, name: str):
        """A request the worker holds until `release(name)`; its future."""
        future = self.pool.submit(self.get, f"/hold/{name}")
        Stack.wait_for(lambda: (self.held / f"{name}.started").exists())
        return future

    def release(self, name: str) -> None:
        (self.held / f"{name}.release").touch()

    def connects(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        except ConnectionRefusedError:
            return False
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.log.close()


@pytest.fixture
def server(tmp_path):
    running = Server(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def test_term_lets_a_worker_finish_its_request_and_takes_no_new_connection(server):
    held = server.hold("a")
    server.process.send_signal(signal.SIGTERM)

    Stack.wait_for(lambda: not server.connects())
    assert not held.done()
    server.release("a")
    status, _ = held.result(timeout=WAIT)
    assert status == 200
    assert server.process.wait(WAIT) == 0


def test_hup_answers_at_once_while_the_old_worker_finishes_its_request(server):
    _, old_worker = server.get("/")
    held = server.hold("b")
    server.process.send_signal(signal.SIGHUP)

    started = time.monotonic()
    Stack.wait_for(lambda: (server.get("/") or (0, old_worker))[1] != old_worker)
    # A new worker answered while the old one still holds its request: nobody waited for it.
    assert not held.done()
    assert time.monotonic() - started < WAIT
    server.release("b")
    assert held.result(timeout=WAIT) == (200, old_worker)
    assert server.process.poll() is None

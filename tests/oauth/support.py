"""Real server processes for tests, and rate-limit windows that will not roll over mid-test."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection
from django_ratelimit.core import _get_window

PYTHON = sys.executable
BIN = Path(sys.executable).parent


def wait_for_fresh_window(key: str, *, period: int = 60, margin: float = 15.0) -> None:
    """django-ratelimit counts in fixed windows; start a counting test well inside one.

    Otherwise a window that ends during the test resets the count and the limit seems not to
    hold. The window of a key is deterministic (django-ratelimit staggers them by key).
    """
    # The window's end is a whole second, which still counts in the ending window (django-
    # ratelimit returns it while the clock is within it): wait until that second is over.
    left = _get_window(key, period) - time.time()
    if left < margin:
        time.sleep(max(left, 0.0) + 1.5)


def free_port() -> int:
    """A loopback port no process listens on, from the OS, for a server this test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The URL of the database this test runs on, for a server process to share it."""
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        raise RuntimeError("server processes can only share a PostgreSQL test database")
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_env(**overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ticketing.settings.test",
        "PYTHONUNBUFFERED": "1",
        "LOG_FORMAT": "plain",
        **overrides,
    }
    if settings.REDIS_URL and "REDIS_URL" not in overrides:
        env["REDIS_URL"] = settings.REDIS_URL
    return env


def gunicorn_command(port: int, *extra: str) -> list[str]:
    return [
        str(BIN / "gunicorn"),
        "ticketing.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--timeout",
        "30",
        *extra,
    ]


def runserver_command(port: int) -> list[str]:
    return [PYTHON, "manage.py", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"]


@contextmanager
def running(command: list[str], *, port: int, env: dict[str, str], log: Path):
    """Start a server, wait until it answers `/api/public/info`, and always stop it."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_up(process, port, log)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_until_up(process: subprocess.Popen, port: int, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server on {port} exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/public/info", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"server on {port} did not start:\n{log.read_text()[-3000:]}")


def get(url: str, *, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()

"""Machinery shared by the bench scripts: databases, app servers and an HTTP client, all local.

Nothing here talks to anything but 127.0.0.1. Servers are real gunicorn processes started with
the production settings (`deploy/gunicorn.conf.py`), so what the scripts measure is what a
deployment runs.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
OUT_DIR = ROOT / "bench" / "out"


# --- Databases ---------------------------------------------------------------------------------


def database_url_named(url: str, name: str) -> str:
    """The same server and credentials as `url`, another database name."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def database_name(url: str) -> str:
    return urllib.parse.urlsplit(url).path.lstrip("/")


def recreate_database(url: str) -> None:
    """Drop and create the database of `url` (the bench's own, never the caller's data)."""
    import psycopg

    name = database_name(url)
    admin_url = database_url_named(url, "postgres")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    with psycopg.connect(database_url_named(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database_name(url)}" WITH (FORCE)')


def server_env(*, database_url: str, redis_url: str | None, **extra: str) -> dict[str, str]:
    """Environment of a production-like process (app server or the bench's own ORM)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="ticketing.settings.production",
        DATABASE_URL=database_url,
        SECRET_KEY=os.environ.get("BENCH_SECRET_KEY") or secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        # The servers are reached over plain HTTP on loopback; TLS is the proxy's job.
        SECURE_SSL_REDIRECT="false",
        # Production refuses the console email backend (ticketing.E001): emails go to files.
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        EMAIL_FILE_PATH=str(OUT_DIR / "mail"),
        LOG_LEVEL=os.environ.get("BENCH_LOG_LEVEL", "INFO"),
        PYTHONUNBUFFERED="1",
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(extra)
    return env


def prepare_database(db_url: str, *, redis_url: str | None, **extra: str) -> dict[str, str]:
    """Recreate and migrate the database of `db_url` and load Django on it in this process;
    returns the servers' environment (`server_env` with `extra`)."""
    recreate_database(db_url)
    env = server_env(database_url=db_url, redis_url=redis_url, **extra)
    manage(env, "migrate", "--no-input")
    setup_django(env)
    return env


def own_database(suffix: str, **extra: str) -> tuple[str, dict[str, str]]:
    """A fresh database of the bench's own beside DATABASE_URL's (`<name>_<suffix>`), prepared
    as `prepare_database` does (REDIS_URL as set); its URL and the servers' environment."""
    base_url, redis_url = default_urls()
    db_url = database_url_named(base_url, f"{database_name(base_url)}_{suffix}")
    print(f"database {database_name(db_url)} (fresh), cache {redis_url or 'none'}", flush=True)
    return db_url, prepare_database(db_url, redis_url=redis_url, **extra)


def release_database(url: str, *, keep: bool) -> None:
    """Close this process's connections and drop the bench's database, unless it is kept."""
    from django.db import connections

    connections.close_all()
    if not keep:
        drop_database(url)


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )


def setup_django(env: dict[str, str]) -> None:
    """Load Django in this process with the servers' settings, to seed and to verify."""
    for key in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "SECRET_KEY"):
        if key in env:
            os.environ[key] = env[key]
    os.environ.update(SECURE_SSL_REDIRECT="false", ALLOWED_HOSTS="127.0.0.1", LOG_LEVEL="WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


# --- App servers -------------------------------------------------------------------------------


@dataclass
class Gunicorn:
    """One gunicorn instance (a master and its workers) on a loopback port."""

    port: int
    env: dict[str, str]
    workers: int | None = None
    name: str = "app"
    process: subprocess.Popen | None = field(default=None, init=False)

    @property
    def log_path(self) -> Path:
        return OUT_DIR / f"{self.name}-{self.port}.log"

    def start(self) -> Gunicorn:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        env = dict(self.env, PORT=str(self.port), HOST="127.0.0.1")
        if self.workers:
            env["WEB_CONCURRENCY"] = str(self.workers)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log_path}")
            reply = call("GET", self.port, "/healthz", timeout=5)
            if reply.status == 200 and len(self.worker_pids()) >= (self.workers or 1):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} on port {self.port} not healthy after {timeout} s")

    def worker_pids(self) -> list[int]:
        """The master's live children: gunicorn's workers."""
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            return [int(pid) for pid in children.read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            return []

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


# --- A PostgreSQL of the bench's own, to restart without touching anyone else's ------------------


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary directory, listening on one loopback port.

    Durability settings are PostgreSQL's defaults (fsync on, synchronous commit), so an
    immediate stop is a real crash: what it acknowledged must survive the restart.
    """

    def __init__(self, port: int):
        self.port = port
        self.bin_dir = _postgres_bin_dir()
        self.base = Path(tempfile.mkdtemp(prefix="ticketing-bench-pg-"))
        self.data_dir = self.base / "data"
        self.log_file = self.base / "postgres.log"
        self._as_postgres = _as_postgres_user()
        if self._as_postgres:
            shutil.chown(self.base, user="postgres", group="postgres")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True)

    def init(self) -> ThrowawayPostgres:
        self._run("initdb", "-D", str(self.data_dir), "-U", "postgres", "-A", "trust", "-N")
        return self

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.base} -c max_connections=100"
        )
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", str(self.log_file), "-w",
            "start",
        )  # fmt: skip

    def stop_immediately(self) -> None:
        """A crash as far as clients can tell: no goodbye, connections cut, recovery on start."""
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def destroy(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop", check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def _postgres_bin_dir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found")


def _as_postgres_user() -> bool:
    """initdb refuses to run as root; run the cluster as the `postgres` user then."""
    return os.geteuid() == 0


# --- HTTP ----------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int  # 0 when no HTTP answer came back (connection refused, reset, timeout)
    body: dict | list | None
    headers: dict[str, str]
    started: float
    elapsed: float
    port: int
    raw: bytes = b""
    error: str | None = None

    @property
    def is_json(self) -> bool:
        return self.body is not None

    @property
    def code(self) -> str | None:
        return self.body.get("error") if isinstance(self.body, dict) else None


def call(
    method: str,
    port: int,
    path: str,
    *,
    token: str | None = None,
    form: dict | None = None,
    json_body=None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> Reply:
    """One request on a fresh connection (sync gunicorn workers close after each answer)."""
    send_headers = {"Accept": "application/json", **(headers or {})}
    if token:
        send_headers["Authorization"] = f"Bearer {token}"
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form, doseq=True).encode()
        send_headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif json_body is not None:
        body = json.dumps(json_body).encode()
        send_headers["Content-Type"] = "application/json"
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=send_headers)
        response = connection.getresponse()
        raw = response.read()
        status, reply_headers = response.status, dict(response.getheaders())
    except (OSError, http.client.HTTPException) as exc:
        return Reply(0, None, {}, started, time.monotonic() - started, port, error=repr(exc))
    finally:
        connection.close()
    elapsed = time.monotonic() - started
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return Reply(status, parsed, reply_headers, started, elapsed, port, raw=raw[:300])


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = math.ceil(pct / 100 * len(ordered))  # nearest-rank definition
    return ordered[min(len(ordered), max(rank, 1)) - 1]


def default_urls() -> tuple[str, str | None]:
    database_url = os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL server (the bench creates its own DB).")
    return database_url, os.environ.get("REDIS_URL")


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

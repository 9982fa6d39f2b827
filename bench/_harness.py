"""The one start-up every bench script shares: a database of its own, app servers, task workers.

Nothing here talks to anything but 127.0.0.1. `Stack` makes a fresh database beside
DATABASE_URL's (or in a throwaway PostgreSQL cluster), migrates it, loads Django on it in this
process (to seed and to verify through the ORM), and starts on demand real gunicorn processes
with the production settings (`deploy/gunicorn.conf.py`) and the Procfile's task workers, so
what the scripts measure is what a deployment runs. Closing it stops them all and drops the
database.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from bench._http import call, free_port

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
OUT_DIR = ROOT / "bench" / "out"
HUGE = "100000000/m"  # a rate limit far above any bench's load: its round trip still happens


def database_url_named(url: str, name: str) -> str:
    """The same server and credentials as `url`, another database name."""
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path=f"/{name}"))


def database_name(url: str) -> str:
    return urllib.parse.urlsplit(url).path.lstrip("/")


def recreate_database(url: str, *, create: bool = True) -> None:
    """Drop the database of `url` (the bench's own, never the caller's data), and create it."""
    import psycopg

    with psycopg.connect(database_url_named(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database_name(url)}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{database_name(url)}"')


def server_env(*, database_url: str, redis_url: str | None, **extra: str) -> dict[str, str]:
    """Environment of a production-like process (app server, task worker, or this one)."""
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


def setup_django(env: dict[str, str]) -> None:
    """Load Django in this process with the servers' settings, to seed and to verify."""
    for key in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "SECRET_KEY"):
        if key in env:
            os.environ[key] = env[key]
    os.environ.update(SECURE_SSL_REDIRECT="false", ALLOWED_HOSTS="127.0.0.1", LOG_LEVEL="WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


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
        env = dict(self.env, PORT=str(self.port), HOST="127.0.0.1")
        if self.workers:
            env["WEB_CONCURRENCY"] = str(self.workers)
        self.log_path.unlink(missing_ok=True)
        command = [PYTHON, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"]
        self.process = _spawn(command, env, self.log_path)
        return self

    def wait_ready(self, timeout: float = 60) -> Gunicorn:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log_path}")
            reply = call("GET", self.port, "/healthz", timeout=5)
            if reply.status == 200 and len(self.worker_pids()) >= (self.workers or 1):
                return self
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
        _stop(self.process)


class Stack:
    """A bench's stack, started once: its database (`<DATABASE_URL's name>_<name>`, or `name` in
    `postgres`, a throwaway cluster), migrated and loaded here; then `server()` and `worker()`
    start app servers and task workers on it. `settings` go to every process; the API's rate
    limit is raised unless they set it. Use it as a context manager: leaving stops everything
    and drops the database (unless `keep_db`)."""

    def __init__(self, name: str, *, keep_db=False, postgres: ThrowawayPostgres | None = None,
                 **settings: str):  # fmt: skip
        if postgres is None:
            base_url, redis_url = default_urls()
            self.db_url = database_url_named(base_url, f"{database_name(base_url)}_{name}")
        else:
            redis_url = os.environ.get("REDIS_URL")
            self.db_url = database_url_named(postgres.url, name)
        self.name, self.keep_db = name, keep_db
        settings = {"API_RATE_LIMIT": HUGE, "CACHE_KEY_PREFIX": f"bench-{name}-{time.time_ns()}",
                    **settings}  # fmt: skip
        print(f"database {database_name(self.db_url)} (fresh), cache {redis_url or 'none'}",
              flush=True)  # fmt: skip
        recreate_database(self.db_url)
        self.env = server_env(database_url=self.db_url, redis_url=redis_url, **settings)
        subprocess.run([PYTHON, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=self.env,
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        setup_django(self.env)
        self.servers: list[Gunicorn] = []
        self.workers: dict[str, subprocess.Popen] = {}

    def server(self, *, workers: int | None = None, port: int = 0, name: str = "",
               wait: bool = True, **settings: str) -> Gunicorn:  # fmt: skip
        """A gunicorn instance on `port` (0: a free one), started (and healthy, if `wait`)."""
        server = Gunicorn(port or free_port(), {**self.env, **settings}, workers, name or self.name)
        self.servers.append(server.start())
        return server.wait_ready() if wait else server

    def worker(self, queue: str, **settings: str) -> None:
        """One `manage.py run_worker` on `queue`, as the Procfile starts them."""
        command = [PYTHON, "manage.py", "run_worker", "--no-reload", "--queue-name", queue]
        log = OUT_DIR / f"{self.name}-worker-{queue}.log"
        self.workers[queue] = _spawn(command, {**self.env, **settings}, log)

    def stop_worker(self, queue: str) -> None:
        _stop(self.workers.pop(queue, None))

    def close(self) -> None:
        for queue in list(self.workers):
            self.stop_worker(queue)
        for server in self.servers:
            server.stop()
        from django.db import connections

        connections.close_all()
        if not self.keep_db:
            recreate_database(self.db_url, create=False)

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def default_urls() -> tuple[str, str | None]:
    database_url = os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL server (the bench creates its own DB).")
    return database_url, os.environ.get("REDIS_URL")


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary directory, listening on one loopback port, to crash
    without touching anyone else's database.

    Durability settings are PostgreSQL's defaults (fsync on, synchronous commit), so an
    immediate stop is a real crash: what it acknowledged must survive the restart.
    """

    def __init__(self, port: int):
        self.port = port
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        initdb = found[-1] if found else shutil.which("initdb")
        if not initdb:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found")
        self.bin_dir = Path(initdb).parent
        self.base = Path(tempfile.mkdtemp(prefix="ticketing-bench-pg-"))
        self.data_dir, self.log_file = self.base / "data", self.base / "postgres.log"
        self._as_postgres = os.geteuid() == 0  # initdb refuses to run as root
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
        self._run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", str(self.log_file),
                  "-w", "start")  # fmt: skip

    def stop_immediately(self) -> None:
        """A crash as far as clients can tell: no goodbye, connections cut, recovery on start."""
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def destroy(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop", check=False)
        shutil.rmtree(self.base, ignore_errors=True)

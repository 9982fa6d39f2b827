"""The topology of deploy/topology, started for the tests on ports of their own, and what the
tests do to it: HTTP to one app host or the balancer, the replica's replay paused, stopped,
started again or promoted."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import psycopg
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent.parent
WAIT = 60  # seconds any condition may take before a test fails


_taken: set[int] = set()


def _free_port(*hosts: str) -> int:
    """A port nothing listens on at any of `hosts` now (the kernel's pick for the first), and
    not picked before in this process."""
    while True:
        with socket.socket() as probe:
            probe.bind((hosts[0], 0))
            port = probe.getsockname()[1]
        try:
            for host in hosts[1:]:
                with socket.socket() as other:
                    other.bind((host, port))
        except OSError:
            continue
        if port not in _taken:
            _taken.add(port)
            return port


# Picked per run, so a stack of `make topology-check` or of another checkout can run beside it.
PORTS = {
    "TOPOLOGY_PORT": _free_port("127.0.0.1"),
    "APP_PORT": _free_port("127.0.0.11", "127.0.0.12"),
    "PGBOUNCER_PORT": _free_port("127.0.0.1"),
    "REPLICA_PORT": _free_port("127.0.0.1"),
}


@dataclass
class Reply:
    status: int
    route: str | None
    body: dict


class Stack:
    def __init__(self, database: str, redis_url: str, *, replica: bool = True):
        self.dir = Path(tempfile.mkdtemp(prefix="ticketing-topology-test-"))
        self.dir.chmod(0o755)  # the replica and PgBouncer run as the postgres user
        self.database = database
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTHONPATH")},
            **{key: str(port) for key, port in PORTS.items()},
            "TOPOLOGY_DIR": str(self.dir / "stack"),
            "TOPOLOGY_DATABASE": database,
            "SKIP_MIGRATE": "1",
            "REDIS_URL": redis_url,
            "CACHE_KEY_PREFIX": f"topology-test-{time.time_ns()}",
            "DATABASE_ROUTE_HEADER": "true",
            "DATABASE_REPLICA_MAX_LAG_SECONDS": "4",
            "DATABASE_REPLICA_RETRY_SECONDS": "1",
            "API_RATE_LIMIT": "1000000/m",
            "WEB_CONCURRENCY": "2",
            "LOG_LEVEL": "WARNING",
            "TOPOLOGY_REPLICA": "streaming" if replica else "none",
        }
        self.hosts = [("127.0.0.11", PORTS["APP_PORT"]), ("127.0.0.12", PORTS["APP_PORT"])]
        self.balancer = ("127.0.0.1", PORTS["TOPOLOGY_PORT"])
        self.replica_data = self.dir / "stack" / "replica" / "data"

    def up(self) -> None:
        subprocess.run(["deploy/topology/up.sh"], cwd=ROOT, env=self.env, check=True, timeout=240)

    def down(self) -> None:
        subprocess.run(["deploy/topology/down.sh"], cwd=ROOT, env=self.env, timeout=120)
        self.dir.rmdir()

    # --- HTTP ---------------------------------------------------------------------------------

    def call(self, method, path, *, token, host=None, body=None) -> Reply:
        address, port = host or self.balancer
        conn = http.client.HTTPConnection(address, port, timeout=30)
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            return Reply(response.status, response.getheader("X-Database-Route"), json.loads(raw))
        finally:
            conn.close()

    def post_form(self, path, form: dict, *, source: str, headers=None) -> int:
        """POST a form through the balancer from `source`, as a client on a host of its own
        (Linux's loopback takes any 127/8 address as a connection's source); the status."""
        conn = http.client.HTTPConnection(*self.balancer, timeout=30, source_address=(source, 0))
        headers = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
        try:
            conn.request("POST", path, body=urlencode(form), headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    # --- The replica ------------------------------------------------------------------------

    def replica_sql(self, sql: str):
        url = f"postgres://postgres@127.0.0.1:{PORTS['REPLICA_PORT']}/postgres"
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(sql).fetchone()

    def wait_replayed(self) -> None:
        """Until the replica has replayed everything the primary has written so far."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            (lsn,) = cursor.fetchone()
        self.wait_for(
            lambda: self.replica_sql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn")[0]
        )

    def pause(self) -> None:
        self.replica_sql("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        self.replica_sql("SELECT pg_wal_replay_resume()")

    def pg_ctl(self, *args: str) -> None:
        binary = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1]
        command = [str(binary), "-D", str(self.replica_data), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        log = ["-l", str(self.replica_data.parent / "postgres.log")] if "start" in args else []
        subprocess.run(command + log, check=True, capture_output=True, timeout=60)

    @staticmethod
    def wait_for(condition, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "condition not met in time"
            time.sleep(0.05)

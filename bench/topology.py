"""The topology of deploy/topology (two app hosts behind HAProxy, PgBouncer, a streaming replica,
Redis), measured, or checked.

    python bench/topology.py            # over --runs runs, alternated with and without
                                        # PgBouncer, the task workers delivering webhooks to a
                                        # local receiver: CPU per request of each process, gate
                                        # scans/s through 1 vs 2 app hosts (each held to --quota
                                        # % of a core), the primary's CPU per 1,000 sync pages
                                        # with and without the replica; medians and ranges
    python bench/topology.py --check    # `make topology-check`: a scan through the balancer, a
                                        # write then a read on the other host, a sync walk with
                                        # the replica paused, then stopped; exit 1 on a miss

Needs the PostgreSQL on 127.0.0.1:5432 (replication allowed from 127.0.0.1), pgbouncer and
haproxy; a database of its own (TOPOLOGY_BENCH_DATABASE, default `ticketing_topology_bench`,
dropped at the end) and REDIS_URL (default: db 7). The processes are the deploy's own start-up
(`deploy/topology/up.sh`); the seed, client and report are the benches'.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._harness import recreate_database, setup_django  # noqa: E402
from bench._http import call as http_call  # noqa: E402

DATABASE = os.environ.get("TOPOLOGY_BENCH_DATABASE", "ticketing_topology_bench")
# The environment the script started with: loading Django here later sets settings of its own.
START_ENV = dict(os.environ)
PRIMARY = "postgres://postgres@127.0.0.1:5432"
WAIT = 180


class Topology:
    def __init__(self, **settings: str):
        self.base = Path(tempfile.mkdtemp(prefix="ticketing-topology-"))
        self.base.chmod(0o755)
        self.env = {
            **START_ENV,
            "TOPOLOGY_DIR": str(self.base / "stack"),
            "TOPOLOGY_DATABASE": DATABASE,
            "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/7"),
            "CACHE_KEY_PREFIX": f"topology-{time.time_ns()}",
            "DATABASE_ROUTE_HEADER": "true",
            "API_RATE_LIMIT": "1000000/m",
            "LOG_LEVEL": "WARNING",
            "PYTHON": sys.executable,
            **settings,
        }
        self.env.pop("DATABASE_URL", None)
        self.values: dict[str, str] = {}

    def up(self) -> None:
        started = time.monotonic()
        subprocess.run(["deploy/topology/up.sh"], cwd=ROOT, env=self.env, check=True, timeout=300)
        env_file = Path(self.env["TOPOLOGY_DIR"]) / "env"
        self.values = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        print(f"topology up in {time.monotonic() - started:.0f} s", flush=True)

    def down(self) -> None:
        subprocess.run(["deploy/topology/down.sh"], cwd=ROOT, env=self.env, timeout=120)
        shutil.rmtree(self.base, ignore_errors=True)

    @property
    def balancer(self) -> tuple[str, int]:
        return _address(self.values["BALANCER"])

    @property
    def hosts(self) -> list[tuple[str, int]]:
        return [_address(host) for host in self.values["APP_HOSTS"].split()]

    def pg_ctl(self, *args: str) -> None:
        binary = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1]
        data = Path(self.values["REPLICA_DIR"]) / "data"
        command = [str(binary), "-D", str(data), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def replica_sql(self, sql: str):
        return sql_one(self.values["DATABASE_REPLICA_URLS"], sql)

    def wait_replayed(self) -> None:
        lsn = sql_one(f"{PRIMARY}/{DATABASE}", "SELECT pg_current_wal_lsn()::text")[0]
        wait_for(lambda: self.replica_sql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'")[0])


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


def sql_one(url: str, sql: str):
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        return conn.execute(sql).fetchone()


def wait_for(condition, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("a condition was not met in time")
        time.sleep(0.05)


def call(address, method: str, path: str, token: str, body=None):
    """One request on a fresh connection: (status, route the reads took, JSON body)."""
    reply = http_call(method, address[1], path, host=address[0], token=token, json_body=body)
    return reply.status, reply.headers.get("X-Database-Route"), reply.body


def database(*, create: bool) -> None:
    recreate_database(f"{PRIMARY}/{DATABASE}", create=create)


def seed(topology: Topology, tickets: int, gates: int):
    """The bench's organizer, event and gate tokens, written through PgBouncer."""
    from django.db import connections

    if "DB_TRANSACTION_POOLER" not in os.environ:  # Django not loaded in this process yet
        os.environ["DB_TRANSACTION_POOLER"] = "true"
        setup_django(
            {
                "DJANGO_SETTINGS_MODULE": "ticketing.settings.production",
                **{k: topology.values[k] for k in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")},
            }
        )
    from bench._data import seed as seed_data

    data = seed_data(tickets=tickets, gates=gates, label="topology")
    connections.close_all()
    topology.wait_replayed()
    return data


class Walker:
    """A scanner following an event's sync feed, keeping its copy of each ticket's status."""

    def __init__(self, address, path: str, token: str, limit: int):
        self.address, self.path, self.token, self.limit = address, path, token, limit
        self.cursor, self.copy, self.routes, self.failures = None, {}, Counter(), 0

    def page(self) -> bool:
        query = f"?limit={self.limit}" + (f"&cursor={quote(self.cursor)}" if self.cursor else "")
        status, route, body = call(
            self.address, "GET", f"{self.path}/tickets/sync{query}", self.token
        )
        if status != 200:
            self.failures += 1
            return False
        self.routes[route] += 1
        for ticket in body["tickets"]:
            self.copy[ticket["id"]] = ticket["status"]
        self.cursor = body["next_cursor"]
        return body["has_more"]

    def drain(self, max_pages: int = 10_000) -> int:
        for pages in itertools.count(1):
            if not self.page() or pages >= max_pages:
                return pages
        return 0


def database_view(event_id: int) -> dict[int, str]:
    from tickets.models import Ticket

    return dict(Ticket.objects.filter(event_id=event_id).values_list("id", "status"))


if __name__ == "__main__":
    from bench.topology_runs import main

    raise SystemExit(main())

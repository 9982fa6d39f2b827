"""Nothing lost when an app host goes away (issues 42 and 45), through deploy/topology's balancer
under gates' load (deploy/topology/rolling_load.py):

  (a) a rolling restart of both app hosts (deploy/topology/rolling-restart.sh): 0 failed
      requests, no gate waiting 1 s or more for an answer;
  (b) `kill -9` of one host's gunicorn (master and workers): only requests in flight at the kill
      fail, and each of their gates, asking again with the same scan_id, hears the first answer
      (200, `replayed: true` when the first was committed), never "already used"; every scan
      answered 200 is a used ticket in the database.

    flock /tmp/bench.lock python deploy/topology/check_rolling.py    # `make topology-check`

Prints the figures; exits 1 when any is beyond its target. Needs what deploy/topology/up.sh
needs; uses a database of its own (dropped at the end) and ports of its own (28xxx).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from rolling_load import Figures, Gates

ROOT = Path(__file__).resolve().parents[2]
DATABASE = "ticketing_rolling_check"
PRIMARY = "postgres://postgres@127.0.0.1:5432"
PORTS = {"TOPOLOGY_PORT": 28080, "APP_PORT": 28000, "PGBOUNCER_PORT": 26432, "REPLICA_PORT": 25433}
STALL = 1.0  # seconds: the longest a gate may wait for an answer during a rolling restart
WAIT = 120  # seconds any condition may take


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gates", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0.02, help="between a gate's scans")
    parser.add_argument("--tickets", type=int, default=30000)
    parser.add_argument(
        "--restart", default="deploy/topology/rolling-restart.sh", help="the restart to measure"
    )
    args = parser.parse_args()
    _sql("postgres", f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    _sql("postgres", f'CREATE DATABASE "{DATABASE}"')
    base = Path(tempfile.mkdtemp(prefix="ticketing-rolling-"))
    base.chmod(0o755)  # PgBouncer runs as the postgres user
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTHONPATH")},
        **{key: str(port) for key, port in PORTS.items()},
        "TOPOLOGY_DIR": str(base / "stack"),
        "TOPOLOGY_DATABASE": DATABASE,
        "TOPOLOGY_REPLICA": "none",
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/7"),
        "CACHE_KEY_PREFIX": f"rolling-{time.time_ns()}",
        "API_RATE_LIMIT": "1000000/m",
        "LOG_LEVEL": "WARNING",
        "PYTHON": sys.executable,
    }
    try:
        subprocess.run(["deploy/topology/up.sh"], cwd=ROOT, env=env, check=True, timeout=300)
        values = dict(
            line.split("=", 1) for line in (base / "stack" / "env").read_text().splitlines()
        )
        event_id, path, tokens, ids = seed(values, args.tickets, args.gates)
        host, port = values["BALANCER"].rsplit(":", 1)
        half = len(ids) // 2

        def gates(tickets):
            return Gates((host, int(port)), path, tokens, tickets, interval=args.interval)

        failures = rolling(gates(ids[:half]), env, args.restart)
        failures += kill(gates(ids[half:]), base / "stack", event_id)
    finally:
        subprocess.run(["deploy/topology/down.sh"], cwd=ROOT, env=env, timeout=120)
        base.rmdir()
        _sql("postgres", f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    print("rolling-check:", "FAILED" if failures else "passed", flush=True)
    return 1 if failures else 0


def rolling(gates: Gates, env: dict, restart: str) -> int:
    print(f"(a) rolling restart of both app hosts ({restart}), under load:", flush=True)
    gates.start()
    _answered(gates, 50)
    since = time.monotonic()
    subprocess.run([restart], cwd=ROOT, env=env, check=True, timeout=300)
    took = time.monotonic() - since
    _answered(gates, 50)
    gates.stop()
    figures = Figures.of(gates.scans, since)
    return _expect(
        [
            (True, f"restart took {took:.1f} s; {figures.requests} requests"),
            (figures.failed == 0, f"failed requests: {figures.failed} (target 0)"),
            (
                figures.longest_wait < STALL,
                f"longest wait for an answer: {figures.longest_wait * 1000:.0f} ms "
                f"(target < {STALL * 1000:.0f}); longest time without any answer: "
                f"{figures.longest_gap * 1000:.0f} ms",
            ),
            (figures.retry_wrong == 0, f"retries not answered 200: {figures.retry_wrong}"),
        ]
    )


def kill(gates: Gates, stack: Path, event_id: int) -> int:
    print("(b) kill -9 of app host 127.0.0.11 (its master and workers), under load:", flush=True)
    gates.start()
    _answered(gates, 50)
    master = int((stack / "app-11.pid").read_text())
    at = time.monotonic()
    os.killpg(master, signal.SIGKILL)  # the master leads its workers' process group
    # Until the kernel has torn down every thread of the processes, their listening socket
    # still accepts: the host is gone when a connection to it is refused.
    deadline = time.monotonic() + WAIT
    while _accepts(("127.0.0.11", PORTS["APP_PORT"])) and time.monotonic() < deadline:
        time.sleep(0.001)
    dead = time.monotonic()
    in_flight = gates.in_flight(at, dead)
    _answered(gates, 200)
    gates.stop()
    figures = Figures.of(gates.scans, dead)
    used = {
        row[0]
        for row in psycopg.connect(f"{PRIMARY}/{DATABASE}", autocommit=True).execute(
            "SELECT id FROM tickets_ticket WHERE event_id = %s AND status = 'used'", (event_id,)
        )
    }
    lost = figures.acknowledged - used
    return _expect(
        [
            (
                True,
                f"{figures.requests} requests; {in_flight} in flight at the kill "
                f"(gone {(dead - at) * 1000:.0f} ms after the signal)",
            ),
            (
                figures.failed <= in_flight and figures.failed_after == 0,
                f"failed requests: {figures.failed} (at most the {in_flight} in flight), "
                f"{figures.failed_after} of them sent after the kill (target 0)",
            ),
            (
                figures.retry_wrong == 0,
                f"asked again with the same scan_id: {figures.failed - figures.retry_wrong} "
                f"heard their first answer ({figures.retry_replayed} replayed, "
                f"{figures.failed - figures.retry_wrong - figures.retry_replayed} first "
                f"admissions), {figures.retry_wrong} did not (target 0)",
            ),
            (
                not lost,
                f"scans answered 200 whose ticket is not used: {len(lost)} (target 0)",
            ),
        ]
    )


def seed(values: dict, tickets: int, gates: int):
    """An event of `tickets` paid tickets and `gates` gate tokens, written to the primary."""
    os.environ.update(
        DJANGO_SETTINGS_MODULE="ticketing.settings.production",
        DATABASE_URL=f"{PRIMARY}/{DATABASE}",
        REDIS_URL=values["REDIS_URL"],
        SECRET_KEY=values["SECRET_KEY"],
        SECURE_SSL_REDIRECT="false",
        ALLOWED_HOSTS="127.0.0.1",
        LOG_LEVEL="WARNING",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connections

    from bench._data import seed as seed_data

    data = seed_data(tickets=tickets, gates=gates, label="rolling")
    connections.close_all()
    path = f"/api/public/organizers/{data.organizer_id}/events/{data.event_id}/tickets/{{}}/checkin"
    return data.event_id, path, data.gate_tokens, data.ticket_ids


def _accepts(address: tuple[str, int]) -> bool:
    """Whether something still listens at `address` (a thread group leader shows as a zombie
    while its other threads, which share its sockets, are still exiting)."""
    try:
        socket.create_connection(address, timeout=1).close()
    except ConnectionRefusedError:
        return False
    except OSError:
        return True
    return True


def _answered(gates: Gates, count: int) -> None:
    """Until `count` more scans have been answered (or the tickets run out)."""
    target = sum(1 for s in gates.scans if s.ended) + count
    deadline = time.monotonic() + WAIT
    while sum(1 for s in gates.scans if s.ended) < target:
        if time.monotonic() > deadline or not any(t.is_alive() for t in gates.threads):
            return
        time.sleep(0.05)


def _expect(checks: list[tuple[bool, str]]) -> int:
    for ok, what in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    return sum(1 for ok, _ in checks if not ok)


def _sql(database: str, statement: str) -> None:
    with psycopg.connect(f"{PRIMARY}/{database}", autocommit=True) as conn:
        conn.execute(statement)


if __name__ == "__main__":
    raise SystemExit(main())

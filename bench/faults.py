"""Faults under load: kill -9 gunicorn workers, crash and restart PostgreSQL, lose nothing.

The script starts a PostgreSQL of its own (a throwaway cluster on a loopback port, so nobody
else's database is touched), two gunicorn instances on it sharing Redis, and 8 gate clients
checking in distinct tickets. A client that gets 503, or no answer at all, tries the same ticket
again, as a scanner would. While they run:
1. `kill -9` one worker of each instance (gunicorn's master must replace it);
2. `pg_ctl -m immediate stop` (a crash: no checkpoint, connections cut), a few seconds down,
   then start again (crash recovery).
Checked afterwards:
- no 500 and no answer that is not JSON, at any time;
- while PostgreSQL was down, check-ins and reads answered 503 `service_unavailable` with
  Retry-After, and /healthz 503 naming the database;
- the service recovered by itself (no restart of the app servers), and how fast;
- no acknowledged check-in was lost: every ticket that got a 200 is `used` in the database,
  with one audit row, and every ticket was checked in exactly once.
Prints the faults injected and the outcome counts. Exits 1 if a check fails.

    REDIS_URL=redis://... python bench/faults.py [--pg-port 8540]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections import Counter, deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    Gunicorn,
    Reply,
    ThrowawayPostgres,
    call,
    database_url_named,
    percentile,
    prepare_database,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--ports", type=int, nargs=2, default=[8511, 8512])
    parser.add_argument("--pg-port", type=int, default=8540)
    parser.add_argument("--workers", type=int, default=3, help="per instance")
    parser.add_argument("--down-seconds", type=float, default=5.0)
    args = parser.parse_args()
    redis_url = os.environ.get("REDIS_URL")

    postgres = ThrowawayPostgres(args.pg_port).init()
    postgres.start()
    servers: list[Gunicorn] = []
    try:
        db_url = database_url_named(postgres.url, "ticketing_faults")
        env = prepare_database(
            db_url,
            redis_url=redis_url,
            CACHE_KEY_PREFIX=f"bench-faults-{time.time_ns()}",
            # Measures faults, not the API limit (one budget per application).
            API_RATE_LIMIT="1000000/m",
        )
        from bench._data import seed

        data = seed(tickets=args.tickets, gates=args.clients, label="faults")
        servers = [
            Gunicorn(port, env, args.workers, name=f"faults{i}")
            for i, port in enumerate(args.ports)
        ]
        for server in servers:
            server.start()
        for server in servers:
            server.wait_ready()
        print(
            f"throwaway PostgreSQL on 127.0.0.1:{args.pg_port}; instances "
            + ", ".join(f"{s.port} ({len(s.worker_pids())} workers)" for s in servers)
        )

        load = FaultLoad(data, args.ports, args.clients)
        monitor = threading.Thread(target=load.watch_health)
        clients = [threading.Thread(target=load.client, args=(i,)) for i in range(args.clients)]
        started = time.monotonic()
        monitor.start()
        for thread in clients:
            thread.start()

        faults = inject_faults(load, servers, postgres, args.down_seconds)

        for thread in clients:
            thread.join(timeout=300)
        load.stop.set()
        monitor.join()
        elapsed = time.monotonic() - started
        print(
            f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} after the run"
        )
        respawned = {s.port: len(s.worker_pids()) for s in servers}
    finally:
        for server in servers:
            server.stop()

    from django.db import connection

    connection.close()
    failures = verify(load, faults, data, respawned, args.workers)
    report(load, faults, elapsed, failures)
    connection.close()
    postgres.destroy()
    return 1 if failures else 0


class FaultLoad:
    def __init__(self, data, ports, clients):
        self.data, self.ports = data, ports
        self.queues = [deque(data.ticket_ids[i::clients]) for i in range(clients)]
        self.replies: list[tuple[str, int | None, Reply]] = []  # (kind, ticket id, reply)
        self.health: list[Reply] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.progress = 0

    def client(self, index: int) -> None:
        token, queue, step = self.data.gate_tokens[index], self.queues[index], 0
        while queue:
            step += 1
            port = self.ports[(index + step) % len(self.ports)]
            if step % 5 == 0:  # gates also read: the event with its ticket types
                reply = call("GET", port, self.data.event_path, token=token, timeout=20)
                self._record("read", None, reply)
                continue
            ticket_id = queue[0]
            reply = call("POST", port, self.data.checkin_path(ticket_id), token=token, form={})
            self._record("checkin", ticket_id, reply)
            if reply.status in (200, 422) or (reply.status >= 400 and reply.status != 503):
                queue.popleft()  # answered for good (a 4xx other than 422 is a failure, below)
                with self.lock:
                    self.progress += 1
            else:
                # 503 or no answer: the scanner tries the same ticket again shortly. Retry-After
                # is honoured up to half a second so that the outage is sampled densely.
                time.sleep(min(float(reply.headers.get("Retry-After", "0.2")), 0.5))

    def watch_health(self) -> None:
        while not self.stop.is_set():
            for port in self.ports:
                self._record("health", None, call("GET", port, "/healthz", timeout=10))
            time.sleep(0.25)

    def _record(self, kind: str, ticket_id: int | None, reply: Reply) -> None:
        with self.lock:
            self.replies.append((kind, ticket_id, reply))

    def wait_progress(self, checkins: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.progress < checkins and time.monotonic() < deadline:
            time.sleep(0.1)


class Faults:
    def __init__(self):
        self.injected: list[str] = []
        self.down_from = self.down_until = 0.0
        self.recovered_at: float | None = None


def inject_faults(load: FaultLoad, servers, postgres: ThrowawayPostgres, down: float) -> Faults:
    faults = Faults()
    total = sum(len(q) for q in load.queues)
    for n, server in enumerate(servers):
        load.wait_progress(total * (n + 1) // 10)
        victim = server.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        faults.injected.append(f"kill -9 worker {victim} of instance :{server.port}")

    load.wait_progress(total * 4 // 10)
    faults.down_from = time.monotonic()
    postgres.stop_immediately()
    time.sleep(down)
    postgres.start()
    faults.down_until = time.monotonic()
    faults.injected.append(
        f"PostgreSQL restart: pg_ctl -m immediate stop (a crash), {down:.0f} s down, start "
        f"(crash recovery); unreachable {faults.down_until - faults.down_from:.1f} s in all"
    )
    return faults


def verify(load: FaultLoad, faults: Faults, data, respawned, workers) -> list[str]:
    from bench._data import ticket_states

    failures: list[str] = []
    answered = [(k, t, r) for k, t, r in load.replies if r.status != 0]
    five_hundreds = [r for _, _, r in answered if r.status >= 500 and r.status != 503]
    if five_hundreds:
        failures.append(
            f"{len(five_hundreds)} answers 5xx other than 503: {five_hundreds[0].raw!r}"
        )
    not_json = [r for _, _, r in answered if not r.is_json]
    if not_json:
        failures.append(f"{len(not_json)} answers not JSON: {not_json[0].raw!r}")

    unavailable = [(k, r) for k, _, r in answered if r.status == 503]
    for kind, reply in unavailable:
        body = reply.body if isinstance(reply.body, dict) else {}
        if kind == "health":
            ok = body.get("database") == "unavailable" and body.get("status") == "unavailable"
        else:
            ok = body.get("error") == "service_unavailable" and body.get("success") is False
        if not ok or not reply.headers.get("Retry-After", "").isdigit():
            failures.append(f"a 503 ({kind}) is not the contract's shape: {reply.raw!r}")
            break
    during = [(k, r) for k, r in unavailable if faults.down_from <= r.started <= faults.down_until]
    for kind in ("checkin", "read", "health"):
        if not any(k == kind for k, _ in during):
            failures.append(f"no 503 seen for {kind} while PostgreSQL was down")

    after = sorted(
        (r.started for k, _, r in answered if k == "checkin" and r.status == 200
         and r.started > faults.down_until),
    )  # fmt: skip
    if not after:
        failures.append("no check-in succeeded after PostgreSQL came back")
    else:
        faults.recovered_at = after[0]
    late = [
        r
        for k, _, r in answered
        if r.status == 503 and r.started > faults.down_until + 10 and k != "health"
    ]
    if late:
        failures.append(f"{len(late)} answers still 503 more than 10 s after the restart")

    for port, count in respawned.items():
        if count != workers:
            failures.append(f"instance :{port} has {count} workers after the kills, not {workers}")

    acked = {t for k, t, r in load.replies if k == "checkin" and r.status == 200}
    states = ticket_states(data.ticket_ids)
    lost = [t for t in acked if states[t].status != "used" or states[t].check_in_logs != 1]
    if lost:
        failures.append(f"{len(lost)} acknowledged check-ins lost or duplicated, e.g. {lost[:5]}")
    not_once = [t for t, s in states.items() if s.status != "used" or s.check_in_logs != 1]
    if not_once:
        failures.append(f"{len(not_once)} tickets not checked in exactly once, e.g. {not_once[:5]}")
    expected = {(200, None), (422, "ticket_already_used"), (503, "service_unavailable")}
    unexpected = [
        r for k, _, r in answered if k == "checkin" and (r.status, r.code) not in expected
    ]
    if unexpected:
        failures.append(f"{len(unexpected)} unexpected check-in answers: {unexpected[0].raw!r}")
    return failures


def report(load: FaultLoad, faults: Faults, elapsed: float, failures: list[str]) -> None:
    outcomes = Counter(
        (kind, reply.status if reply.status else "no answer", reply.code)
        for kind, _, reply in load.replies
    )
    requests = [r for k, _, r in load.replies if k != "health"]
    latencies = [r.elapsed * 1000 for r in requests]
    acked = {t for k, t, r in load.replies if k == "checkin" and r.status == 200}
    committed_unacked = {
        t for k, t, r in load.replies if k == "checkin" and r.status == 422
    }  # an earlier try committed but its answer was lost (worker killed) or was a 503
    print(f"faults injected: {len(faults.injected)}")
    for fault in faults.injected:
        print(f"  - {fault}")
    print(
        f"load: {len(requests)} requests in {elapsed:.1f} s = {len(requests) / elapsed:.0f}/s, "
        f"p99 {percentile(latencies, 99):.0f} ms (health probes not counted)"
    )
    print("outcomes (kind, status, error):")
    for (kind, status, code), n in sorted(outcomes.items(), key=str):
        print(f"  {kind:8} {status!s:10} {code or '':22} {n}")
    if faults.recovered_at:
        print(
            f"database down {faults.down_until - faults.down_from:.1f} s; first check-in 200 "
            f"{faults.recovered_at - faults.down_until:.2f} s after PostgreSQL was back"
        )
    print(
        f"check-ins acknowledged (200): {len(acked)}; committed but answer lost, then seen as "
        f"already used on retry: {len(committed_unacked)}"
    )
    if failures:
        print(f"FAILED: {len(failures)} checks")
        for failure in failures[:30]:
            print(f"  - {failure}")
    else:
        print("OK: no 500, 503 JSON while the database was down, recovered by itself,")
        print("    every acknowledged check-in is in the database, each ticket checked in once")


if __name__ == "__main__":
    sys.exit(main())

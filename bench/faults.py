"""Faults under load: kill -9 gunicorn workers, crash and restart PostgreSQL, lose nothing.

    REDIS_URL=redis://... python bench/faults.py [--pg-port 8540]

A PostgreSQL of its own (a throwaway cluster on a loopback port), two gunicorn instances on it
sharing Redis, 8 gates checking in distinct tickets (a 503 or no answer: the same ticket again,
as a scanner would). Meanwhile: `kill -9` of a worker of each instance; `pg_ctl -m immediate
stop` (a crash), a few seconds down, start (crash recovery). Checked: no 500 and no answer that
is not JSON; while PostgreSQL was down, 503 `service_unavailable` with Retry-After (and /healthz
503 naming the database); recovery without restarting the app servers, and how fast; every
acknowledged check-in kept, every ticket checked in exactly once.
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

from bench._data import seed, ticket_states
from bench._harness import Stack, ThrowawayPostgres
from bench._http import Reply, call
from bench._report import Report, percentile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--ports", type=int, nargs=2, default=[8511, 8512])
    parser.add_argument("--pg-port", type=int, default=8540)
    parser.add_argument("--workers", type=int, default=3, help="per instance")
    parser.add_argument("--down-seconds", type=float, default=5.0)
    args = parser.parse_args()

    postgres = ThrowawayPostgres(args.pg_port).init()
    postgres.start()
    try:
        with Stack("ticketing_faults", postgres=postgres) as stack:
            data = seed(tickets=args.tickets, gates=args.clients, label="faults")
            servers = [
                stack.server(workers=args.workers, port=port, name=f"faults{i}", wait=False)
                for i, port in enumerate(args.ports)
            ]
            for server in servers:
                server.wait_ready()
            instances = ", ".join(f"{s.port} ({len(s.worker_pids())} workers)" for s in servers)
            print(f"throwaway PostgreSQL on 127.0.0.1:{args.pg_port}; instances {instances}")
            load, faults, elapsed = run(args, data, servers, postgres)
            respawned = {s.port: len(s.worker_pids()) for s in servers}
            for server in servers:
                server.stop()
            from django.db import connection

            connection.close()  # cut by the crash: the checks below open a new one
            failures = verify(load, faults, data, respawned, args.workers)
    finally:
        postgres.destroy()
    return report(load, faults, elapsed, failures)


def run(args, data, servers, postgres):
    """The clients and the health probes, while the faults are injected."""
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
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} after the run")
    return load, faults, time.monotonic() - started


class FaultLoad:
    def __init__(self, data, ports, clients):
        self.data, self.ports = data, ports
        self.queues = [deque(data.ticket_ids[i::clients]) for i in range(clients)]
        self.replies: list[tuple[str, int | None, Reply]] = []  # (kind, ticket id, reply)
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


def report(load: FaultLoad, faults: Faults, elapsed: float, failures: list[str]) -> int:
    outcomes = Counter(
        (kind, reply.status if reply.status else "no answer", reply.code)
        for kind, _, reply in load.replies
    )
    requests = [r for k, _, r in load.replies if k != "health"]
    acked = {t for k, t, r in load.replies if k == "checkin" and r.status == 200}
    # An earlier try committed but its answer was lost (worker killed) or was a 503.
    retried = {t for k, t, r in load.replies if k == "checkin" and r.status == 422}
    report = Report("faults under load: " + "; ".join(faults.injected))
    report.figure("requests/s (health probes not counted)", len(requests) / elapsed, "/s",
                  digits=0, note=f"{len(requests)} in {elapsed:.1f} s")  # fmt: skip
    report.figure("latency p99", percentile([r.elapsed * 1000 for r in requests], 99), "ms")
    report.table(["kind", "status", "error", "answers"],
                 [[kind, status, code or "", n]
                  for (kind, status, code), n in sorted(outcomes.items(), key=str)])  # fmt: skip
    report.figure("database down", faults.down_until - faults.down_from, "s")
    if faults.recovered_at:
        report.figure("first check-in 200 after PostgreSQL was back",
                      faults.recovered_at - faults.down_until, "s", digits=2)  # fmt: skip
    report.figure("check-ins acknowledged (200)", len(acked), digits=0)
    report.figure("committed, answer lost, seen as used on retry", len(retried), digits=0)
    for failure in failures[:30]:
        report.check(False, failure)
    report.check(
        not failures,
        "no 500, 503 JSON while the database was down, recovered "
        "by itself, every acknowledged check-in kept, each ticket checked in once",
    )
    return report.done()


if __name__ == "__main__":
    sys.exit(main())

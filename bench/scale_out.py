"""Scale-out: two gunicorn instances share one PostgreSQL and one Redis under gate traffic.

    DATABASE_URL=postgres://... REDIS_URL=redis://... python bench/scale_out.py

8 client threads alternate between the instances (`bench/_harness.py`), checking in 2,000
distinct tickets and racing on 200 shared ones (every thread tries each, in the same order),
with a burst of `GET /me` by one person in the middle. Checked in the database afterwards: each
ticket checked in exactly once (`used`, one audit row); every 200 there with the `used_at` the
client was told; one 200 per shared ticket, the other attempts 422 `ticket_already_used`; the
/me limit (10 a minute per user) held across both: exactly 10 through, the rest 429 with
Retry-After; no 5xx, no answer that is not JSON. Prints requests/s and latency percentiles.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import zlib
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import seed, ticket_states
from bench._harness import Stack
from bench._http import Reply, call
from bench._report import Report, percentile

ME_LIMIT = 10
ME_PERIOD = 60


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distinct", type=int, default=2000)
    parser.add_argument("--shared", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--ports", type=int, nargs=2, default=[8501, 8502])
    parser.add_argument("--workers", type=int, default=None, help="per instance (default: cores)")
    parser.add_argument("--me-calls", type=int, default=5, help="GET /me per client in the burst")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("Set REDIS_URL: the instances must share their rate-limit counters.")
    # The API limit (one budget per application) is raised by the stack; /me's is checked here.
    with Stack("scale_out", keep_db=args.keep_db) as stack:
        data = seed(tickets=args.distinct + args.shared, gates=args.clients, label="scale")
        distinct, shared = data.ticket_ids[: args.distinct], data.ticket_ids[args.distinct :]
        servers = [
            stack.server(workers=args.workers, port=port, name=f"scale{i}", wait=False)
            for i, port in enumerate(args.ports)
        ]
        for server in servers:
            server.wait_ready()
        print("instances: " + ", ".join(
            f"127.0.0.1:{s.port} ({len(s.worker_pids())} workers)" for s in servers))  # fmt: skip
        load = Load(data, distinct, shared, args.clients, args.ports, args.me_calls)
        load.run()
        # Clients and servers share this machine's cores: the figures depend on what else runs.
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} after the run")
        for server in servers:
            server.stop()
        states = ticket_states(data.ticket_ids)
    return report(load, verify(load, states, distinct, shared, data.me_user_id))


class Load:
    """The clients: each works through its own list; the /me burst happens mid-way, together."""

    def __init__(self, data, distinct, shared, clients, ports, me_calls):
        self.data, self.ports, self.clients, self.me_calls = data, ports, clients, me_calls
        self.plans = [_plan(distinct[i::clients], shared) for i in range(clients)]
        self.checkins: list[tuple[int, Reply]] = []  # (ticket id, reply)
        self.me: list[Reply] = []
        self.lock = threading.Lock()
        self.me_barrier = threading.Barrier(clients, action=self._avoid_window_edge)
        self.elapsed = 0.0

    def _avoid_window_edge(self) -> None:
        """Start the burst well inside one rate-limit window, so exactly 10 may pass.

        django-ratelimit's windows end at a per-key offset into each minute; this computes the
        same edge for the person's key and waits out the few seconds before it if needed.
        """
        key = f"user:{self.data.me_user_id}".encode()
        now = int(time.time())
        edge = now - now % ME_PERIOD + zlib.crc32(key) % ME_PERIOD
        if edge < now:
            edge += ME_PERIOD
        if edge - time.time() < 10:
            time.sleep(max(0.0, edge - time.time()) + 1)

    def run(self) -> None:
        threads = [threading.Thread(target=self._client, args=(i,)) for i in range(self.clients)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.elapsed = time.monotonic() - started

    def _client(self, index: int) -> None:
        token = self.data.gate_tokens[index]
        plan = self.plans[index]
        burst_at = len(plan) // 3
        for step, ticket_id in enumerate(plan):
            if step == burst_at:
                self._me_burst(index, step)
            port = self.ports[(index + step) % len(self.ports)]
            reply = call("POST", port, self.data.checkin_path(ticket_id), token=token, form={})
            with self.lock:
                self.checkins.append((ticket_id, reply))

    def _me_burst(self, index: int, step: int) -> None:
        self.me_barrier.wait()
        for n in range(self.me_calls):
            port = self.ports[(index + step + n) % len(self.ports)]
            reply = call("GET", port, "/api/public/me", token=self.data.me_token)
            with self.lock:
                self.me.append(reply)


def _plan(own: list[int], shared: list[int]) -> list[int]:
    """The client's own tickets with the shared ones spread evenly among them, in one order."""
    plan, total = [], len(own) + len(shared)
    own_iter, shared_iter = iter(own), iter(shared)
    placed_shared = 0
    for position in range(total):
        if placed_shared < len(shared) and position * len(shared) >= placed_shared * total:
            plan.append(next(shared_iter))
            placed_shared += 1
        else:
            plan.append(next(own_iter))
    return plan


def verify(load: Load, states, distinct, shared, me_user_id) -> list[str]:
    failures: list[str] = []
    by_ticket: dict[int, list[Reply]] = defaultdict(list)
    for ticket_id, reply in load.checkins:
        by_ticket[ticket_id].append(reply)
    every = [reply for _, reply in load.checkins] + load.me

    bad = [r for r in every if r.status >= 500 or r.status == 0 or not r.is_json]
    if bad:
        sample = bad[0]
        failures.append(
            f"{len(bad)} answers were 5xx, not JSON or missing; first: {sample.status} "
            f"{sample.error or sample.raw!r}"
        )

    for ticket_id in distinct + shared:
        state = states.get(ticket_id)
        if state is None or state.status != "used" or state.used_at is None:
            failures.append(f"ticket {ticket_id} is not used in the database: {state}")
            continue
        if state.check_in_logs != 1:
            failures.append(f"ticket {ticket_id} has {state.check_in_logs} check-in audit rows")
        oks = [r for r in by_ticket[ticket_id] if r.status == 200]
        if len(oks) != 1:
            failures.append(f"ticket {ticket_id} got {len(oks)} answers 200, not exactly 1")
            continue
        told = oks[0].body.get("ticket", {}).get("used_at") if oks[0].is_json else None
        # The API may print fewer sub-second digits than the database keeps.
        if told is None or abs((datetime.fromisoformat(told) - state.used_at).total_seconds()) >= 1:
            failures.append(f"ticket {ticket_id}: client told used_at {told}, DB {state.used_at}")
        others = [r for r in by_ticket[ticket_id] if r.status != 200]
        wrong = [r for r in others if r.status != 422 or r.code != "ticket_already_used"]
        if wrong:
            failures.append(
                f"ticket {ticket_id}: a losing attempt got {wrong[0].status} {wrong[0].code}"
            )
    for ticket_id in distinct:
        if len(by_ticket[ticket_id]) != 1:
            failures.append(f"distinct ticket {ticket_id} was tried {len(by_ticket[ticket_id])}x")

    me_ok = [r for r in load.me if r.status == 200]
    me_limited = [r for r in load.me if r.status == 429]
    if len(me_ok) != ME_LIMIT:
        failures.append(f"/me: {len(me_ok)} of {len(load.me)} got 200 in one window, not 10")
    if len(me_ok) + len(me_limited) != len(load.me):
        failures.append("/me: some answers were neither 200 nor 429")
    for reply in me_limited:
        if reply.code != "rate_limited" or not reply.headers.get("Retry-After", "").isdigit():
            failures.append(f"/me 429 without rate_limited + Retry-After: {reply.raw!r}")
            break
    for reply in me_ok:
        if reply.body.get("id") != me_user_id:
            failures.append(f"/me answered for another user: {reply.raw!r}")
            break
    return failures


def report(load: Load, failures: list[str]) -> int:
    replies = [reply for _, reply in load.checkins] + load.me
    latencies = [r.elapsed * 1000 for r in replies]
    statuses = Counter((r.status, r.code) for r in replies)
    ports = Counter(r.port for r in replies)
    me_ports = Counter(r.port for r in load.me if r.status == 200)
    report = Report("scale-out: two instances, one PostgreSQL and one Redis")
    report.figure("requests/s, the whole mixed load", len(replies) / load.elapsed, "/s", digits=0,
                  note=f"{len(replies)} in {load.elapsed:.1f} s")  # fmt: skip
    for pct in (50, 95, 99):
        report.figure(f"latency p{pct}", percentile(latencies, pct), "ms")
    report.figure("shared tickets whose attempts overlapped", _overlapping_shared(load), digits=0)
    rows = [[f"{status} {code or 'ok'}", n] for (status, code), n in sorted(statuses.items())]
    rows += [[f"port {port}", n] for port, n in sorted(ports.items())]
    rows += [[f"/me allowed, port {port}", n] for port, n in sorted(me_ports.items())]
    report.table(["outcome (status, error), instance", "answers"], rows)
    for failure in failures[:30]:
        report.check(False, failure)
    report.check(not failures, "every ticket checked in exactly once, every 200 in the database "
                 "and the audit log, /me limit held across both instances, no 5xx")  # fmt: skip
    return report.done()


def _overlapping_shared(load: Load) -> int:
    """Shared tickets where two attempts were in flight at the same moment: real races."""
    attempts: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for ticket_id, reply in load.checkins:
        attempts[ticket_id].append((reply.started, reply.started + reply.elapsed))
    raced = 0
    for spans in attempts.values():
        if len(spans) < 2:
            continue
        spans.sort()
        latest_end = spans[0][1]
        for start, end in spans[1:]:
            if start < latest_end:
                raced += 1
                break
            latest_end = max(latest_end, end)
    return raced


if __name__ == "__main__":
    sys.exit(main())

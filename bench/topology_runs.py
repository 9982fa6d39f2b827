"""bench/topology.py's two runs: the scripted check (`--check`) and the measurements."""

from __future__ import annotations

import argparse
import itertools
import os
import secrets
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench._http import Receiver
from bench._report import Report, median
from bench._wrk import cpu_seconds as process_cpu_seconds
from bench.topology import (
    DATABASE,
    PRIMARY,
    Topology,
    Walker,
    call,
    database,
    database_view,
    seed,
    sql_one,
    wait_for,
)


def main() -> int:
    parser = argparse.ArgumentParser(description="deploy/topology, checked or measured")
    parser.add_argument("--check", action="store_true", help="the scripted check only")
    parser.add_argument("--runs", type=int, default=3, help="each with, then without PgBouncer")
    parser.add_argument("--quota", type=int, default=25, help="%% of a core per app host")
    parser.add_argument("--seconds", type=float, default=10, help="per scan measurement")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--count", type=int, default=200, help="requests of each kind per run")
    parser.add_argument("--pages", type=int, default=1000, help="sync pages per measurement")
    args = parser.parse_args()
    database(create=True)
    settings = {"DATABASE_REPLICA_MAX_LAG_SECONDS": "4", "DATABASE_REPLICA_RETRY_SECONDS": "1"}
    if not args.check:
        # One key for every topology started: it encrypts the webhook endpoint's secret.
        settings.update(APP_CPU_QUOTA=str(args.quota), WEBHOOK_ALLOW_PRIVATE_URLS="true",
                        SECRET_KEY=secrets.token_urlsafe(50))  # fmt: skip
    topology = Topology(**settings) if args.check else None
    report = Report("deploy/topology: " + ("checked" if args.check else "measured"))
    try:
        if args.check:
            topology.up()
            check(topology, report)
            return report.done()
        results, receiver, data = defaultdict(list), Receiver(), None
        for run in range(args.runs):
            for pooler in ("pgbouncer", "none"):  # alternated: the machine's drift hits both
                topology = Topology(**settings, TOPOLOGY_POOLER=pooler,
                                    SKIP_MIGRATE="0" if data is None else "1")  # fmt: skip
                topology.up()
                if data is None:
                    data = prepare(topology, args, receiver)
                    tickets = iter(data.ticket_ids)
                measure(topology, data, tickets, args, run, pooler, receiver, results)
                close_connections()
                topology.down()
        summarize(results, receiver, report)
        return report.done()
    finally:
        close_connections()
        if topology:
            topology.down()
        database(create=False)


def close_connections() -> None:
    from django.conf import settings as django_settings
    from django.db import connections

    if django_settings.configured:
        connections.close_all()


# --- make topology-check ----------------------------------------------------------------------


def check(topology: Topology, report: Report) -> None:
    data = seed(topology, tickets=200, gates=3)
    gate, reader, _ = data.gate_tokens
    expect = report.check

    ids = iter(data.ticket_ids)
    started = time.monotonic()
    status, route, _ = call(topology.balancer, "POST", data.checkin_path(next(ids)), gate, {})
    took = (time.monotonic() - started) * 1000
    expect(status == 200, f"a scan through the balancer: {status} in {took:.0f} ms ({route})")

    first, second = topology.hosts
    call(first, "POST", data.checkin_path(next(ids)), gate, {})
    status, route, body = call(second, "GET", f"{data.event_path}/check_in_stats", gate)
    used = body["tickets"]["used"] if status == 200 else None
    expect(used == 2, f"a write on {first[0]}, then a read on {second[0]}: used={used} ({route})")

    walker = Walker(topology.balancer, data.event_path, reader, limit=50)
    walker.page()
    topology.replica_sql("SELECT pg_wal_replay_pause()")
    for _ in range(5):
        call(topology.balancer, "POST", data.checkin_path(next(ids)), gate, {})
    walker.drain()
    topology.replica_sql("SELECT pg_wal_replay_resume()")
    topology.wait_replayed()
    walker.drain()
    same = walker.copy == database_view(data.event_id)
    expect(
        same and not walker.failures,
        f"a sync walk with replay paused: {sum(walker.routes.values())} pages "
        f"{dict(walker.routes)}, {walker.failures} failed, copy matches the database: {same}",
    )

    topology.pg_ctl("-m", "immediate", "-w", "stop")
    call(topology.balancer, "POST", data.checkin_path(next(ids)), gate, {})
    walker.routes.clear()
    walker.drain()
    same = walker.copy == database_view(data.event_id)
    expect(
        same and not walker.failures and set(walker.routes) == {"primary"},
        f"the replica stopped: {sum(walker.routes.values())} pages {dict(walker.routes)}, "
        f"{walker.failures} failed, copy matches the database: {same}",
    )


# --- Measurements -------------------------------------------------------------------------------


def scans_per_second(addresses, data, tickets, clients: int, seconds: float):
    """Check-ins of distinct tickets by `clients` threads for `seconds`: (scans/s, 200s, others)."""
    lock, counts = threading.Lock(), {"ok": 0, "bad": 0}
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        token = data.gate_tokens[number % len(data.gate_tokens)]
        for turn in itertools.count(number):
            if time.monotonic() >= deadline:
                return
            with lock:
                ticket = next(tickets, None)
            if ticket is None:
                return
            address = addresses[turn % len(addresses)]
            status, _, _ = call(address, "POST", data.checkin_path(ticket), token, {})
            with lock:
                counts["ok" if status == 200 else "bad"] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts["ok"] / (time.monotonic() - started), counts["ok"], counts["bad"]


def cpu_seconds(pids) -> dict[int, float]:
    times = {pid: process_cpu_seconds(pid) for pid in pids}
    return {pid: seconds for pid, seconds in times.items() if seconds is not None}


def primary_pids(application: str | None = None) -> list[int]:
    """The primary's backends of the bench's database (those of one application_name: the task
    workers' are `worker`, deploy/topology/up.sh)."""
    sql = f"SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = '{DATABASE}'"
    sql += f" AND application_name = '{application}'" if application else ""
    return sql_one(f"{PRIMARY}/postgres", sql)[0] or []


def primary_cpu_for_pages(topology, data, pages: int) -> tuple[float, dict]:
    """The primary's CPU seconds (its backends of the bench's database) while scanners walk
    `pages` sync pages of 100 tickets. The WAL sender is left out: it streams the whole
    cluster's WAL, which reads do not write, and other databases' writes would count."""
    idle = idle_rates({"primary": primary_pids})["primary"]
    before, started = cpu_seconds(primary_pids()), time.monotonic()
    walker = Walker(topology.balancer, data.event_path, data.gate_tokens[-1], limit=100)
    done = 0
    while done < pages:
        walker.cursor = None
        done += walker.drain(max_pages=pages - done)
    after = cpu_seconds(primary_pids())
    spent = sum(t - before.get(pid, 0.0) for pid, t in after.items())
    return max(0.0, spent - idle * (time.monotonic() - started)), dict(walker.routes)


def app_pids(topology: Topology, task_workers: bool = False) -> list[int]:
    """The gunicorn workers of both app hosts (the children of the masters, `app-<host>.pid`),
    or the task workers (the rest of up.sh's record of what it started)."""
    top = Path(topology.env["TOPOLOGY_DIR"])
    masters = [int(path.read_text()) for path in top.glob("app-*.pid")]
    if task_workers:
        return [int(pid) for pid in (top / "pids").read_text().split() if int(pid) not in masters]
    children = [Path(f"/proc/{pid}/task/{pid}/children") for pid in masters]
    return [int(pid) for path in children if path.exists() for pid in path.read_text().split()]


def replica_pids(topology: Topology) -> list[int]:
    sql = f"SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = '{DATABASE}'"
    return topology.replica_sql(sql)[0] or []


def settle(receiver: Receiver) -> None:
    """Until the workers have delivered every event of the changes made so far and have no task
    left (the creations' ticket emails): their work is counted where it was caused."""
    wait_for(lambda: receiver.received >= receiver.expected, timeout=300)
    wait_for(lambda: not sql_one(f"{PRIMARY}/{DATABASE}", TASKS_LEFT)[0], timeout=300)


TASKS_LEFT = (
    "SELECT count(*) FROM django_tasks_database_dbtaskresult WHERE status IN ('READY', 'RUNNING')"
)


def prepare(topology: Topology, args, receiver):
    """The seed (tickets enough for every run), and the organizer's webhook endpoint."""
    os.environ["WEBHOOK_ALLOW_PRIVATE_URLS"] = "true"  # this process's registration of it
    data = seed(topology, tickets=max(20_000, 6_500 * args.runs), gates=args.clients)
    from webhooks.services import webhook_endpoint_create

    webhook_endpoint_create(organizer_id=data.organizer_id, url=receiver.url,
                            event_types=["ticket.checked_in", "ticket.created"])  # fmt: skip
    return data


def idle_rates(groups: dict) -> dict[str, float]:
    """CPU seconds per second each group spends with no request (the task workers polling their
    queues and outbox, the balancer's health checks): measured to be subtracted."""
    before, started = {name: cpu_seconds(pids()) for name, pids in groups.items()}, time.monotonic()
    time.sleep(5)  # a fixed idle window: the baseline's own measure, not a wait for a condition
    seconds = time.monotonic() - started
    return {name: sum(t - before[name].get(p, 0.0) for p, t in cpu_seconds(pids()).items())
            / seconds for name, pids in groups.items()}  # fmt: skip


def costs(topology: Topology, data, tickets, count: int, kinds, receiver):
    """CPU milliseconds per request of each kind, on the app servers, PgBouncer, the primary
    (and the task workers' part of it), the replica and the task workers: `count` requests of
    each, one at a time, through the balancer, until the workers have delivered their webhooks;
    less what each spends idle meanwhile. Returns ({kind: {process: ms}}, idle ms/s)."""
    from django.db.models import F

    from events.models import TicketType
    from organizers.models import Membership
    from tickets.models import Ticket

    type_id = Ticket.objects.get(pk=data.ticket_ids[0]).ticket_type_id
    Membership.objects.filter(organizer_id=data.organizer_id).update(role="admin")  # creates
    TicketType.objects.filter(pk=type_id).update(quantity=F("quantity") + count)
    pgbouncer = Path(topology.env["TOPOLOGY_DIR"]) / "pgbouncer" / "pgbouncer.pid"
    groups = {
        "app": lambda: app_pids(topology),
        "pgbouncer": lambda: [int(pgbouncer.read_text())],
        "primary": primary_pids,
        "primary, workers'": lambda: primary_pids("worker"),
        "replica": lambda: replica_pids(topology),
        "task workers": lambda: app_pids(topology, task_workers=True),
    }
    path, token = data.event_path, data.gate_tokens[0]
    reader = data.gate_tokens[-1]  # never writes: its reads may use the replica
    create = {"ticket_type_id": type_id, "firstname": "Bench", "lastname": "Holder",
              "email": "holder@bench.example", "phone": "+66812345678"}  # fmt: skip
    requests = {
        "scan": lambda: ("POST", data.checkin_path(next(tickets)), token, {}),
        "sync page (100)": lambda: ("GET", f"{path}/tickets/sync?limit=100", reader, None),
        "stats": lambda: ("GET", f"{path}/check_in_stats", reader, None),
        "list": lambda: ("GET", f"{path}/tickets", reader, None),
        "create": lambda: ("POST", f"{path}/tickets", data.gate_tokens[1], create),
    }
    settle(receiver)
    idle = idle_rates(groups)
    out = {}
    for kind in kinds:
        before = {name: cpu_seconds(pids()) for name, pids in groups.items()}
        started, written = time.monotonic(), 0
        for _ in range(count):
            method, url, caller, body = requests[kind]()
            status = call(topology.balancer, method, url, caller, body)[0]
            written += method == "POST" and status in (200, 201)
        receiver.expected += written
        settle(receiver)
        seconds, out[kind] = time.monotonic() - started, {}
        for name, pids in groups.items():
            after = cpu_seconds(pids())
            delta = sum(t - before[name].get(pid, 0.0) for pid, t in after.items())
            out[kind][name] = (delta - idle[name] * seconds) * 1000 / count
    return out, {name: rate * 1000 for name, rate in idle.items()}


KINDS = ("scan", "sync page (100)", "stats", "list", "create")


def measure(topology, data, tickets, args, run: int, pooler: str, receiver, results) -> None:
    """One run's figures, with PgBouncer or without, into `results` (lists across runs)."""
    print(f"run {run + 1}, {pooler}", flush=True)
    kinds = KINDS if pooler == "pgbouncer" else ("scan",)
    table, idle = costs(topology, data, tickets, args.count, kinds, receiver)
    for kind, row in [*table.items(), ("idle, ms/s", idle)]:
        for name, value in row.items():
            results[pooler, kind, name].append(value)
    call(topology.hosts[0], "GET", f"{data.event_path}/check_in_stats", data.gate_tokens[0])
    hosts = {"1 host": topology.hosts[:1], "2 hosts": topology.hosts}
    for label in sorted(hosts, reverse=run % 2 == 1) if pooler == "pgbouncer" else ["2 hosts"]:
        settle(receiver)
        rate, ok, bad = scans_per_second(hosts[label], data, tickets, args.clients, args.seconds)
        receiver.expected += ok
        results[pooler, "scans/s", label].append(rate)
        results[pooler, "scans/s", "non-200"].append(bad)
    if pooler == "none":
        return
    settle(receiver)
    topology.wait_replayed()
    with_replica, routes = primary_cpu_for_pages(topology, data, args.pages)
    topology.pg_ctl("-m", "fast", "-w", "stop")
    wait_for(lambda: call(topology.balancer, "GET", f"{data.event_path}/check_in_stats",
                          data.gate_tokens[-1])[1] == "primary")  # fmt: skip
    without, _ = primary_cpu_for_pages(topology, data, args.pages)
    print(f"  sync pages with the replica: {routes}", flush=True)
    results[pooler, "pages", "with"].append(with_replica * 1000 / args.pages)
    results[pooler, "pages", "without"].append(without * 1000 / args.pages)


def spread(values) -> str:
    return f"{median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def summarize(results, receiver, report: Report) -> None:
    """Medians across the runs, with their ranges (lowest–highest)."""
    names = ["app", "pgbouncer", "primary", "primary, workers'", "replica", "task workers"]
    for pooler in ("pgbouncer", "none"):
        runs = len(results[pooler, "scan", "app"])
        kinds = [kind for kind in (*KINDS, "idle, ms/s") if results[pooler, kind, "app"]]
        rows = [[kind, *(spread(results[pooler, kind, name]) for name in names)] for kind in kinds]
        report.section(f"{'with' if pooler == 'pgbouncer' else 'without'} PgBouncer: CPU ms per "
                       f"request, median (range) of {runs} runs")  # fmt: skip
        report.table(["request", *names], rows)
    report.section("gate scans/s (app hosts each held to --quota of a core), median (range)")
    for pooler, label in (("pgbouncer", "1 host"), ("pgbouncer", "2 hosts"), ("none", "2 hosts")):
        values = results[pooler, "scans/s", label]
        note = f"{spread(values)}; non-200: {sum(results[pooler, 'scans/s', 'non-200'])}"
        name = label + ("" if pooler == "pgbouncer" else ", without PgBouncer")
        report.figure(name, median(values), "/s", digits=0, note=note)
    one, two = results["pgbouncer", "scans/s", "1 host"], results["pgbouncer", "scans/s", "2 hosts"]
    ratios = [b / a for a, b in zip(one, two, strict=True)]
    report.ratio("2 hosts / 1 host", median(ratios), times=True, at_least=1.7, note=spread(ratios))
    report.section("the primary's CPU per 1,000 sync pages (100 tickets each), s")
    pages = {k: results["pgbouncer", "pages", k] for k in ("without", "with")}
    for key, values in pages.items():
        report.figure(f"{key} the replica", median(values), "s", digits=2, note=spread(values))
    moved = [1 - a / b for a, b in zip(pages["with"], pages["without"], strict=True) if b]
    report.ratio("moved off the primary", median(moved), at_least=0.8, note=spread(moved))
    got, sent = receiver.received, receiver.expected
    report.check(got == sent, f"webhook deliveries received: {got} for {sent} changes")

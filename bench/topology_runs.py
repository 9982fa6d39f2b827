"""bench/topology.py's two runs: the scripted check (`--check`) and the measurements."""

from __future__ import annotations

import argparse
import itertools
import os
import threading
import time
from pathlib import Path

from bench.topology import (
    Topology,
    Walker,
    call,
    database_view,
    drop_database,
    recreate_database,
    seed,
    wait_for,
)


def main() -> int:
    parser = argparse.ArgumentParser(description="deploy/topology, checked or measured")
    parser.add_argument("--check", action="store_true", help="the scripted check only")
    parser.add_argument("--quota", type=int, default=25, help="%% of a core per app host")
    parser.add_argument("--seconds", type=float, default=10, help="per scan measurement")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--pages", type=int, default=1000, help="sync pages per measurement")
    args = parser.parse_args()
    recreate_database()
    settings = {"DATABASE_REPLICA_MAX_LAG_SECONDS": "4", "DATABASE_REPLICA_RETRY_SECONDS": "1"}
    if not args.check:
        settings["APP_CPU_QUOTA"] = str(args.quota)
    topology = Topology(**settings)
    try:
        topology.up()
        if args.check:
            return check(topology)
        data, tickets = measure(topology, args)
        from django.db import connections

        connections.close_all()
        topology.down()
        # The same gate load with the app hosts straight on the primary: PgBouncer's cost.
        topology = Topology(**settings, TOPOLOGY_POOLER="none", SKIP_MIGRATE="1")
        topology.up()
        print("without PgBouncer (app hosts straight to the primary, prepared statements):")
        costs(topology, data, tickets, count=200, kinds=("scan",))
        two, bad = scans_per_second(topology.hosts, data, tickets, args.clients, args.seconds)
        print(f"gate scans/s, 2 hosts, without PgBouncer: {two:.0f}; non-200: {bad}", flush=True)
        return 0
    finally:
        from django.conf import settings as django_settings
        from django.db import connections

        if django_settings.configured:
            connections.close_all()
        topology.down()
        drop_database()


# --- make topology-check ----------------------------------------------------------------------


def check(topology: Topology) -> int:
    data = seed(topology, tickets=200, gates=3)
    gate, reader, _ = data.gate_tokens
    failures: list[str] = []

    def expect(ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            failures.append(what)

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
    print("topology-check:", "FAILED" if failures else "passed", flush=True)
    return 1 if failures else 0


# --- Measurements -------------------------------------------------------------------------------


def scans_per_second(addresses, data, tickets, clients: int, seconds: float) -> tuple[float, int]:
    """Check-ins of distinct tickets by `clients` threads for `seconds`: (scans/s, non-200s)."""
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
    return counts["ok"] / (time.monotonic() - started), counts["bad"]


def cpu_seconds(pids) -> dict[int, float]:
    tick = os.sysconf("SC_CLK_TCK")
    times = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    return times


def primary_pids() -> list[int]:
    from bench.topology import DATABASE, PRIMARY, sql_one

    sql = f"SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = '{DATABASE}'"
    return sql_one(f"{PRIMARY}/postgres", sql)[0] or []


def primary_cpu_for_pages(topology, data, pages: int) -> tuple[float, dict]:
    """The primary's CPU seconds (its backends of the bench's database) while scanners walk
    `pages` sync pages of 100 tickets. The WAL sender is left out: it streams the whole
    cluster's WAL, which reads do not write, and other databases' writes would count."""
    # What the primary spends meanwhile anyway (the task workers polling their queue), per
    # second, measured idle first and subtracted.
    before, started = cpu_seconds(primary_pids()), time.monotonic()
    time.sleep(5)  # a fixed idle window: the baseline's own measure, not a wait for a condition
    after = cpu_seconds(primary_pids())
    idle_rate = sum(t - before.get(p, 0.0) for p, t in after.items()) / (time.monotonic() - started)
    before, started = cpu_seconds(primary_pids()), time.monotonic()
    walker = Walker(topology.balancer, data.event_path, data.gate_tokens[-1], limit=100)
    done = 0
    while done < pages:
        walker.cursor = None
        done += walker.drain(max_pages=pages - done)
    after = cpu_seconds(primary_pids())
    spent = sum(t - before.get(pid, 0.0) for pid, t in after.items())
    return max(0.0, spent - idle_rate * (time.monotonic() - started)), dict(walker.routes)


def app_pids(topology: Topology) -> list[int]:
    """The gunicorn workers of both app hosts (the masters' children)."""
    masters = (Path(topology.env["TOPOLOGY_DIR"]) / "pids").read_text().split()[0::2]
    pids = []
    for master in masters:
        children = Path(f"/proc/{master}/task/{master}/children")
        pids += [int(pid) for pid in children.read_text().split()] if children.exists() else []
    return pids


def replica_pids(topology: Topology) -> list[int]:
    from bench.topology import DATABASE

    sql = f"SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = '{DATABASE}'"
    return topology.replica_sql(sql)[0] or []


def costs(topology: Topology, data, tickets, count: int, kinds=None) -> None:
    """CPU milliseconds per request of each kind, on the app servers, PgBouncer, the primary and
    the replica: `count` requests of each, one at a time, through the balancer."""
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
        "replica": lambda: replica_pids(topology),
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
    print(f"CPU ms per request ({count} of each, one at a time):", flush=True)
    for kind, request in requests.items():
        if kinds and kind not in kinds:
            continue
        before = {name: cpu_seconds(pids()) for name, pids in groups.items()}
        statuses = set()
        for _ in range(count):
            method, url, caller, body = request()
            statuses.add(call(topology.balancer, method, url, caller, body)[0])
        spent = {}
        for name, pids in groups.items():
            after = cpu_seconds(pids())
            delta = sum(t - before[name].get(pid, 0.0) for pid, t in after.items())
            spent[name] = f"{delta * 1000 / count:.2f}"
        print(f"  {kind:16} {spent} statuses {sorted(statuses)}", flush=True)


def measure(topology: Topology, args):
    """Prints the figures; returns the bench's data and its tickets not scanned yet."""
    data = seed(topology, tickets=20_000, gates=args.clients)
    tickets = iter(data.ticket_ids)
    costs(topology, data, tickets, count=200)
    first, _ = topology.hosts
    call(first, "GET", f"{data.event_path}/check_in_stats", data.gate_tokens[0])  # warm up
    one, bad_one = scans_per_second([first], data, tickets, args.clients, args.seconds)
    two, bad_two = scans_per_second(topology.hosts, data, tickets, args.clients, args.seconds)
    print(
        f"gate scans/s, app hosts held to {args.quota}% of a core each: 1 host {one:.0f}, "
        f"2 hosts {two:.0f} ({two / one:.2f}x; target >= 1.7x); non-200: {bad_one + bad_two}",
        flush=True,
    )
    topology.wait_replayed()
    with_replica, routes = primary_cpu_for_pages(topology, data, args.pages)
    print(f"  sync pages with the replica: {routes}", flush=True)
    topology.pg_ctl("-m", "fast", "-w", "stop")
    wait_for(lambda: call(topology.balancer, "GET", f"{data.event_path}/check_in_stats",
                          data.gate_tokens[-1])[1] == "primary")  # fmt: skip
    without, routes = primary_cpu_for_pages(topology, data, args.pages)
    print(f"  sync pages without it: {routes}", flush=True)
    per = 1000 / args.pages
    moved = 1 - with_replica / without if without else float("nan")
    print(
        f"primary CPU per 1,000 sync pages (100 tickets each): {without * per:.2f} s without "
        f"the replica, {with_replica * per:.2f} s with it: {moved:.0%} moved off the primary "
        "(target >= 80%)",
        flush=True,
    )
    return data, tickets

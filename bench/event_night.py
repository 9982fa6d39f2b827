"""Event night: how many scans per second the gate sustains with p99 ≤ 100 ms (issue 29).

The figure a night at the doors needs is not a ratio but a capacity: how fast the gates may
scan before a scan keeps the queue waiting. This bench offers the production-like stack more
and more load and reports the highest throughput at which wrk's p99 stayed ≤ 100 ms.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), with wrk installed, from the
repository root (about 2 minutes; `--classes sync` alone about 1):

    python bench/event_night.py               # or: make bench-night
    python bench/event_night.py --classes sync --seconds 6 --steps 1,4,8,16

It creates a database of its own (the server's name plus `_night_bench`) and seeds one event in
multi mode (`bench.gate.seed_multi_event`: check-in types "Entrance" and "VIP Lounge"). Every
request is a scan-by-code of a ticket not admitted yet, with `check_in_type_ids` of both types:
the gate bench's "scan, 2 check-in types". gunicorn runs `deploy/gunicorn.conf.py` with the
production settings and `--workers` processes of each worker class in `--classes`: `sync` (one
thread, a new connection per request, as a gate through a proxy that does not keep them), then
`gthread` with the deploy's threads (4 per worker), its default, for comparison. The rate
limiter is set far above the load, so its Redis round trip still happens on every scan.

wrk is a closed loop: each connection is a gate that scans again as soon as it has its answer.
The offered load is stepped up by the number of connections (`--steps`); each step is an
untimed `--warm-up` and `--seconds` timed, at that many connections, and takes the tickets no
earlier step used. Steps run back to back without a vacuum in between, as the scans of a night
do. Per step: scans/s, wrk's p50 and p99 (its latency distribution, from a request's send to
its answer), answers other than 2xx, socket errors and timeouts (10 s), and CPU as shares of
one core: wrk's, the gunicorn workers' and the whole machine's (`/proc/stat`; PostgreSQL and
Redis, and anything else running, are the difference). The figure is the highest rate among
the steps with p99 ≤ 100 ms in which every scan was admitted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _wrk  # noqa: E402
from bench._data import reference_codes, reopen, settle  # noqa: E402
from bench._harness import Gunicorn, free_port, own_database, release_database  # noqa: E402
from bench.gate import multi_scan_body, seed_multi_event  # noqa: E402

P99_LIMIT_MS = 100
# A sync worker needs threads = 1 (with more, gunicorn runs gthread); gthread keeps the deploy's.
THREADS = {"sync": {"GUNICORN_THREADS": "1"}}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="1,2,4,6,8,12,16,24,32", help="wrk connections.")
    parser.add_argument("--seconds", type=int, default=4, help="Timed seconds per step.")
    parser.add_argument("--warm-up", type=int, default=1, help="Untimed seconds before each.")
    parser.add_argument("--per-second", type=int, default=500, help="Tickets per step-second.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
    parser.add_argument("--classes", default="sync,gthread", help="gunicorn worker classes.")
    parser.add_argument("--port", type=int, default=0, help="Loopback port (0: a free one).")
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    steps = [int(step) for step in args.steps.split(",")]
    classes = args.classes.split(",")
    bench_url, env = own_database(
        "night_bench", API_RATE_LIMIT="100000000/m", CACHE_KEY_PREFIX="night-bench"
    )
    tickets = args.per_second * (args.warm_up + args.seconds) * len(steps)
    event, types = seed_multi_event(tickets=tickets, label="night")
    scan = _wrk.Load(
        event.event_path + "/tickets/checkin",
        method="POST",
        body=multi_scan_body(types),
        items=reference_codes(event, event.ticket_ids),
        tokens=event.gate_tokens,
    )
    print(f"{tickets} tickets, 2 check-in types; each step {args.warm_up} s warm-up, "
          f"{args.seconds} s timed, wrk -t1", flush=True)  # fmt: skip
    figures, failed = {}, False
    try:
        for worker_class in classes:
            reopen(event.event_id)
            settle()
            runs = ladder(args, env, worker_class, scan, steps)
            figures[worker_class] = best(runs)
            failed = failed or any(unadmitted(run) for run in runs)
    finally:
        release_database(bench_url, keep=args.keep_db)
    print()
    for worker_class, run in figures.items():
        label = f"{args.workers} {worker_class} workers"
        if run is None:
            print(f"event night ({label}): no step held p99 ≤ {P99_LIMIT_MS} ms")
        else:
            print(f"event night: {run.rate:.0f} scans/s sustained at p99 ≤ {P99_LIMIT_MS} ms "
                  f"({label}, {run.name}: p99 {run.p99_ms:.1f} ms)")  # fmt: skip
    return 1 if failed else 0


def ladder(args, env, worker_class: str, scan: _wrk.Load, steps: list[int]) -> list[_wrk.WrkRun]:
    """One server of `worker_class`, the steps in turn; each step's runs take unused tickets."""
    port = args.port or free_port()
    server = Gunicorn(
        port=port,
        env={**env, "GUNICORN_WORKER_CLASS": worker_class, **THREADS.get(worker_class, {})},
        workers=args.workers,
        name=f"night-{worker_class}",
    )
    server.start()
    runs, used = [], 0

    def timed(name: str, seconds: int, connections: int) -> _wrk.WrkRun:
        nonlocal used
        load = _wrk.Load(**{**scan.__dict__, "items": scan.items[used:]})
        run = _wrk.run(name, port, load, seconds=seconds, connections=connections,
                       server_pids=server.worker_pids)  # fmt: skip
        used += run.requests + connections  # at most one scan per connection cut off in flight
        return run

    try:
        server.wait_ready()
        # gunicorn quietly runs gthread in place of sync when threads > 1.
        if f"Using worker: {worker_class}" not in server.log_path.read_text():
            raise RuntimeError(f"gunicorn did not start {worker_class} workers: {server.log_path}")
        print(f"\ngunicorn {worker_class}, {len(server.worker_pids())} workers on port {port}; "
              f"CPU in shares of one core, of the machine's {os.cpu_count()}")  # fmt: skip
        header = (f"{'conns':>5} {'scans/s':>8} {'p50 ms':>7} {'p99 ms':>8} {'non-2xx':>7} "
                  f"{'errors':>6} {'wrk core':>8} {'server':>6} {'machine':>7}")  # fmt: skip
        print(header + "\n" + "-" * len(header), flush=True)
        for connections in steps:
            timed("warm-up", args.warm_up, connections)
            busy = machine_busy_seconds()
            run = timed(f"c={connections}", args.seconds, connections)
            machine = (machine_busy_seconds() - busy) / run.wall_seconds
            runs.append(run)
            print(f"{connections:5d} {run.rate:8.1f} {run.p50_ms:7.1f} {run.p99_ms:8.1f} "
                  f"{unadmitted(run):7d} {run.socket_errors:6d} {run.wrk_core_share:8.0%} "
                  f"{run.server_core_share:6.0%} {machine:7.0%}", flush=True)  # fmt: skip
    finally:
        server.stop()
    return runs


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent on anything but idling since boot (`/proc/stat`'s first line:
    user, nice, system, idle, iowait, irq, softirq, steal; guest time is already in user)."""
    ticks = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def unadmitted(run: _wrk.WrkRun) -> int:
    """Answers other than 2xx: a refusal (a ticket scanned twice, the tickets run out) or an
    error."""
    return sum(run.unexpected(set(range(200, 300))).values())


def best(runs: list[_wrk.WrkRun]) -> _wrk.WrkRun | None:
    """The fastest step with p99 within the limit, every scan admitted and no socket error."""
    held = [
        run
        for run in runs
        if run.p99_ms <= P99_LIMIT_MS and not unadmitted(run) and not run.socket_errors
    ]
    return max(held, key=lambda run: run.rate, default=None)


if __name__ == "__main__":
    raise SystemExit(main())

"""The gate's workloads on a production-like server, each as a ratio to `GET /info`, in one run.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), from the repository root:

    python bench/gate.py --rounds 3         # or: make bench-gate
    python bench/gate.py --seconds 10 --long-seconds 0 --workers 2

It creates a database of its own (the server's name plus `_gate_bench`), seeds one event of
`--tickets` tickets (`bench/_data.py`), and starts gunicorn with `deploy/gunicorn.conf.py` and the
production settings plus a counting middleware (`bench/gate_settings.py`, `bench/_counting.py`:
SQL statements and Redis round trips counted in the server, on the drivers, per request). Then
each workload runs for `--seconds` at `--concurrency` client threads, one new connection per
request (as a gate through a proxy that does not keep connections to the clients):

- `GET /info`: no token, no database; the baseline every other line is a ratio to;
- `GET /organizers`: the trivial authenticated GET;
- scan-by-code check-in: `POST .../tickets/checkin` with a `reference_code`, each a new ticket;
- find by code, event-scoped: `GET .../tickets/search?reference_code=`;
- find by code, global: `GET /tickets/search?event_id=&reference_code=`;
- free-text `q=` on the event's tickets (a number that matches a ticket or a few);
- a list page of 50, pages spread over the whole event.

Each workload starts from the same settled database: what the one before wrote vacuumed and
checkpointed, as autovacuum and the checkpointer leave a live one between bursts
(`bench._data.settle`), so that no workload pays for another's writes.

With `--rounds N` every workload runs N times, in turn (the scanned tickets made active again
between rounds), and each ratio is the median of its rounds' ratios, each to that round's
`/info`: this machine's speed drifts by tens of percent within minutes, and one round measures
the drift as much as the code.

Gate tokens are half application tokens, half staff user tokens, one per client thread. Then
one workload runs `--long-seconds` more, to show its p99 over a long run against its p50. With
`--q-scale`, two more events (2,000 and 200,000 tickets) time `q=` on each, for the ratio.
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._counting import REDIS_HEADER, SQL_HEADER  # noqa: E402
from bench._data import reopen, seed, settle  # noqa: E402
from bench._harness import Gunicorn, call, own_database, percentile, release_database  # noqa: E402

INFO = "GET /info"


@dataclass
class Result:
    name: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    sql: list[int] = field(default_factory=list)
    redis: list[int] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def ms(self, pct: float) -> float:
        return percentile(self.latencies, pct) * 1000

    @staticmethod
    def mean(values: list[int]) -> float:
        return sum(values) / len(values) if values else float("nan")

    @classmethod
    def pooled(cls, name: str, runs: list[Result]) -> Result:
        """One result of several runs: their requests pooled, at their median rate."""
        pooled = cls(name)
        for run in runs:
            pooled.latencies += run.latencies
            pooled.sql += run.sql
            pooled.redis += run.redis
            for key, count in run.failures.items():
                pooled.failures[key] = pooled.failures.get(key, 0) + count
        # The median rate, as a duration over the pooled requests.
        pooled.seconds = len(pooled.latencies) / statistics.median(run.rate for run in runs)
        return pooled


def run_for(name: str, seconds: float, concurrency: int, send) -> Result:
    """`send(i, client)` from `concurrency` threads until `seconds` have passed."""
    result = Result(name)
    counter = iter(range(10**12))
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        while time.monotonic() < deadline:
            with lock:
                i = next(counter)
            reply = send(i, number)
            with lock:
                result.latencies.append(reply.elapsed)
                if SQL_HEADER in reply.headers:
                    result.sql.append(int(reply.headers[SQL_HEADER]))
                    result.redis.append(int(reply.headers[REDIS_HEADER]))
                if reply.status != 200:
                    key = f"{reply.status} {reply.code or reply.error or ''}".strip()
                    result.failures[key] = result.failures.get(key, 0) + 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.seconds = time.monotonic() - started
    return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15, help="Timed seconds per workload.")
    parser.add_argument("--warmup", type=float, default=2, help="Untimed seconds per workload.")
    parser.add_argument("--long-seconds", type=float, default=60, help="The long run (0: none).")
    parser.add_argument("--concurrency", type=int, default=8, help="Client threads.")
    parser.add_argument("--tickets", type=int, default=20_000, help="Tickets of the event.")
    parser.add_argument("--port", type=int, default=0, help="Loopback port (0: a free one).")
    parser.add_argument("--workers", type=int, default=None, help="Default: the config's.")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="Times every workload runs, in turn; each ratio is the median of its rounds'.",
    )
    parser.add_argument("--q-scale", action="store_true", help="Also q= at 2,000 vs 200,000.")
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    port = args.port or free_port()
    bench_url, env = own_database(
        "gate_bench",
        DJANGO_SETTINGS_MODULE="bench.gate_settings",
        # Far above what the bench reaches: the limiter's round trip still happens each call.
        API_RATE_LIMIT="100000000/m",
        CACHE_KEY_PREFIX="gate-bench",
    )
    data = seed(tickets=args.tickets, gates=args.concurrency, label="gate")
    from django.urls import NoReverseMatch, reverse

    from tickets.models import Ticket

    codes = dict(Ticket.objects.filter(event_id=data.event_id).values_list("id", "reference_code"))
    all_codes = [codes[i] for i in data.ticket_ids]
    scan_codes = iter(all_codes)  # each scan a ticket not admitted yet (in this round)
    scan_lock = threading.Lock()
    try:
        scan_path = reverse(
            "ticket-scan-checkin",
            kwargs={"organizer_id": data.organizer_id, "event_id": data.event_id},
        )
    except NoReverseMatch:
        scan_path = None
    event = data.event_path
    pages = max(1, args.tickets // 50)
    rng = random.Random(14)

    def token(client: int) -> str:
        return data.gate_tokens[client % len(data.gate_tokens)]

    def get(path_of):
        def send(i: int, client: int):
            return call("GET", port, path_of(i), token=token(client))

        return send

    def scan(i: int, client: int):
        with scan_lock:
            code = next(scan_codes, None)
        if code is None:
            raise SystemExit("Ran out of tickets to scan: raise --tickets or lower --seconds.")
        return call("POST", port, scan_path, token=token(client), form={"reference_code": code})

    def code(i: int) -> str:
        return urllib.parse.quote(rng.choice(all_codes))

    workloads = [
        (INFO, lambda i, client: call("GET", port, "/api/public/info")),
        ("GET /organizers", get(lambda i: "/api/public/organizers")),
        ("scan-by-code check-in", scan if scan_path else None),
        ("find by code, event", get(lambda i: f"{event}/tickets/search?reference_code={code(i)}")),
        (
            "find by code, global",
            get(
                lambda i: (
                    f"/api/public/tickets/search?event_id={data.event_id}&reference_code={code(i)}"
                )
            ),
        ),
        ("q= on event tickets", get(lambda i: f"{event}/tickets?q={rng.randrange(args.tickets)}")),
        (
            "list page of 50",
            get(lambda i: f"{event}/tickets?per_page=50&page={rng.randrange(1, pages + 1)}"),
        ),
    ]
    scale_events = []
    if args.q_scale:
        for size in (2_000, 200_000):
            print(f"seeding an event of {size:,} tickets for q=", flush=True)
            other = seed(tickets=size, gates=args.concurrency, label=f"q{size}")
            scale_events.append((size, other))

    server = Gunicorn(port=port, env=env, workers=args.workers, name="gate-bench")
    server.start()
    rounds: dict[str, list[Result]] = {name: [] for name, send in workloads if send}
    long_result = None
    scale_results = []
    try:
        server.wait_ready()
        workers = len(server.worker_pids())
        print(f"gunicorn on 127.0.0.1:{port}, {workers} workers, c={args.concurrency}", flush=True)
        for number in range(1, args.rounds + 1):
            if number > 1:  # the same tickets to scan again
                reopen(data.event_id)
                scan_codes = iter(all_codes)
            for name, send in workloads:
                if send is None:
                    continue
                settle()  # each workload from the same settled database (`bench._data.settle`)
                if args.warmup:
                    run_for(name, args.warmup, args.concurrency, send)
                rounds[name].append(run_for(name, args.seconds, args.concurrency, send))
                print(f"  {number}: {name:<24} {rounds[name][-1].rate:8.1f} req/s", flush=True)
        if args.long_seconds:
            settle()
            name, send = workloads[3]
            long_result = run_for(f"{name} ({args.long_seconds:.0f} s)", args.long_seconds,
                                  args.concurrency, send)  # fmt: skip
        for size, other in scale_events:

            def q_other(i: int, client: int, other=other, size=size):
                tokens = other.gate_tokens
                path = f"{other.event_path}/tickets?q={rng.randrange(size)}"
                return call("GET", port, path, token=tokens[client % len(tokens)])

            settle()
            run_for("warm-up", args.warmup, args.concurrency, q_other)
            scale_results.append((size, run_for(f"q= at {size:,}", args.seconds,
                                                 args.concurrency, q_other)))  # fmt: skip
    finally:
        server.stop()
        release_database(bench_url, keep=args.keep_db)

    info_rates = [result.rate for result in rounds[INFO]]
    info_rate = statistics.median(info_rates)
    in_rounds = (
        f"; in {args.rounds} rounds: pooled percentiles, median rate and ratio (the ratio's range "
        "in brackets)"
        if args.rounds > 1
        else ""
    )
    print(
        f"\n{args.tickets:,} tickets; each workload {args.seconds:.0f} s at c={args.concurrency}, "
        f"a new connection per request; {workers} gunicorn workers; ratios to {INFO} in this run"
        f"{in_rounds}"
    )
    header = (
        f"{'workload':<26} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'SQL/req':>8} "
        f"{'Redis/req':>9} {'vs /info':>8}  non-200"
    )
    print(header)
    print("-" * len(header))

    def line(name: str, result: Result | None, ratios: list[float] | None = None) -> None:
        if result is None:
            print(f"{name:<26} not available (no scan-by-code route)")
            return
        ratios = ratios or [result.rate / info_rate]
        spread = f" [{min(ratios):.1%}–{max(ratios):.1%}]" if len(ratios) > 1 else ""
        print(
            f"{name:<26} {result.rate:8.1f} {result.ms(50):8.1f} {result.ms(99):8.1f} "
            f"{Result.mean(result.sql):8.2f} {Result.mean(result.redis):9.2f} "
            f"{statistics.median(ratios):8.1%}  {result.failures or '-'}{spread}"
        )

    for name, send in workloads:
        if send is None:
            line(name, None)
            continue
        runs = rounds[name]
        pooled = Result.pooled(name, runs)
        line(name, pooled, [run.rate / info for run, info in zip(runs, info_rates, strict=True)])
    if long_result is not None:
        line(long_result.name, long_result)
        print(
            f"{long_result.name}: p99 is {long_result.ms(99) / long_result.ms(50):.1f}× its p50 "
            f"(target ≤ 4×)"
        )
    if scale_results:
        for _, result in scale_results:
            line(result.name, result)
        (_, small), (_, large) = scale_results
        print(f"q= p50 at 200,000 / at 2,000: {large.ms(50) / small.ms(50):.2f}× (target ≤ 2×)")
    failed = any(run.failures for runs in rounds.values() for run in runs)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

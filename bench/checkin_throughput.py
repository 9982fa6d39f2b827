"""Check-in throughput against a production-like server, with `GET /info` as the baseline.

Run on PostgreSQL (`DATABASE_URL`; `REDIS_URL` optional), from the repository root:

    python bench/checkin_throughput.py
    python bench/checkin_throughput.py --requests 3000 --concurrency 8 --rounds 2

It creates a database of its own (the server's name plus `_checkin_bench`), migrates it, seeds
one event with enough tickets through the ORM, and starts gunicorn with the production settings
(`ticketing.settings.production`, `deploy/gunicorn.conf.py`: DEBUG off, SECRET_KEY set,
ALLOWED_HOSTS 127.0.0.1, SECURE_SSL_REDIRECT off because the loopback has no TLS) on one
loopback port. Then, `--rounds` times and alternately so both see the same machine load:

- `GET /api/public/info` (no token, no database write): the framework's baseline;
- `GET .../events/{e}/check_in_types` with the gate tokens: a reference that pays for the same
  authentication, rate limit and organizer check as a check-in, and reads one small table;
- `POST .../tickets/{t}/checkin`, each request a different ticket, from gate clients that use
  their own tokens (half application tokens, half staff user tokens).

Each phase sends a fixed number of requests at a fixed concurrency, one request per connection
(sync workers close after answering). It prints requests/s, p50 and p99 per phase, the ratio of
check-in throughput to the baseline, and checks afterwards that every ticket was admitted
exactly once with one audit row. The target: check-in throughput ≥ 50% of the baseline.

The per-token rate limit (1200/min) would throttle a benchmark, so the server runs with a
limit far above what it can reach; the limit's cache round trip still happens on every call.

With `--floor`, two more phases show what is left for a check-in's duties: bench-only DRF views
(`devtools/bench_floor.py`) without token, rate limit or organizer check, one running `SELECT 1`
and one running only the check-in's admission statement (the same conditional UPDATE and audit
row).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import seed, ticket_states  # noqa: E402
from bench._harness import Gunicorn, call, own_database, percentile, release_database  # noqa: E402

TARGET_RATIO = 0.5
INFO_PATH = "/api/public/info"


@dataclass
class Phase:
    name: str
    requests: int
    seconds: float
    latencies: list[float]
    failures: dict[str, int]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies, 50) * 1000

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 99) * 1000


def run_phase(name: str, *, requests: int, concurrency: int, send) -> Phase:
    """`send(i, client)` for i in 0..requests-1, over `concurrency` client threads."""
    next_index = iter(range(requests))
    lock = threading.Lock()
    latencies: list[float] = []
    failures: dict[str, int] = {}

    def client(number: int) -> None:
        while True:
            with lock:
                i = next(next_index, None)
            if i is None:
                return
            reply = send(i, number)
            with lock:
                latencies.append(reply.elapsed)
                if reply.status != 200:
                    key = f"{reply.status} {reply.code or reply.error or ''}".strip()
                    failures[key] = failures.get(key, 0) + 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Phase(name, requests, time.monotonic() - started, latencies, failures)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="Requests per timed phase.")
    parser.add_argument("--concurrency", type=int, default=8, help="Client threads.")
    parser.add_argument("--rounds", type=int, default=2, help="Baseline/check-in pairs.")
    parser.add_argument("--warmup", type=int, default=100, help="Untimed requests of each kind.")
    parser.add_argument("--port", type=int, default=8301, help="Loopback port for gunicorn.")
    parser.add_argument(
        "--workers", type=int, default=None, help="Gunicorn workers (default: the config's)."
    )
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="Also time bench-only views doing only SELECT 1, and only the admission statement.",
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    bench_url, env = own_database(
        "checkin_bench",
        API_RATE_LIMIT="100000000/m",
        CACHE_KEY_PREFIX="checkin-bench",
        **({"DJANGO_SETTINGS_MODULE": "devtools.bench_floor"} if args.floor else {}),
    )
    checkins = args.warmup + args.rounds * args.requests * (2 if args.floor else 1)
    data = seed(tickets=checkins, gates=args.concurrency, label="checkin")
    ticket_ids = iter(data.ticket_ids)
    ids_lock = threading.Lock()

    def info(i: int, client: int):
        return call("GET", args.port, INFO_PATH)

    def authenticated_read(i: int, client: int):
        token = data.gate_tokens[client % len(data.gate_tokens)]
        return call("GET", args.port, f"{data.event_path}/check_in_types", token=token)

    def check_in(i: int, client: int):
        with ids_lock:
            ticket_id = next(ticket_ids)
        token = data.gate_tokens[client % len(data.gate_tokens)]
        return call("POST", args.port, data.checkin_path(ticket_id), token=token, form={})

    def floor(kind: str):
        def send(i: int, client: int):
            with ids_lock:
                ticket_id = next(ticket_ids) if kind == "admit" else data.ticket_ids[0]
            path = f"/bench-floor/{kind}/{data.organizer_id}/{data.event_id}/{ticket_id}"
            return call("POST", args.port, path, form={})

        return send

    kinds = [
        ("GET /info", info),
        *([("POST floor SELECT 1", floor("select-one"))] if args.floor else []),
        *([("POST floor admission", floor("admit"))] if args.floor else []),
        ("GET check_in_types", authenticated_read),
        ("POST checkin", check_in),
    ]

    server = Gunicorn(port=args.port, env=env, workers=args.workers, name="checkin-bench")
    server.start()
    phases: list[Phase] = []
    try:
        server.wait_ready()
        workers = len(server.worker_pids())
        print(f"gunicorn on 127.0.0.1:{args.port}, {workers} workers", flush=True)
        for name, send in (("warm-up info", info), ("warm-up check-in", check_in)):
            run_phase(name, requests=args.warmup, concurrency=args.concurrency, send=send)
        for round_number in range(1, args.rounds + 1):
            for name, send in kinds:
                phase = run_phase(
                    f"{name} #{round_number}",
                    requests=args.requests,
                    concurrency=args.concurrency,
                    send=send,
                )
                phases.append(phase)
                print(
                    f"  {phase.name:<22} {phase.rate:8.1f} req/s   p50 {phase.p50_ms:7.1f} ms"
                    f"   p99 {phase.p99_ms:7.1f} ms   non-200: {phase.failures or 0}",
                    flush=True,
                )
    finally:
        server.stop()

    states = ticket_states(data.ticket_ids)
    admitted_once = sum(1 for s in states.values() if s.status == "used" and s.check_in_logs == 1)
    release_database(bench_url, keep=args.keep_db)

    baseline = [p for p in phases if p.name.startswith("GET /info")]
    authenticated = [p for p in phases if p.name.startswith("GET check_in_types")]
    gate = [p for p in phases if p.name.startswith("POST checkin")]

    def summary(label: str, group: list[Phase]) -> tuple[float, float, float]:
        rate = statistics.median(p.rate for p in group)
        latencies = [value for p in group for value in p.latencies]
        p50, p99 = percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000
        print(f"{label:<28} {rate:8.1f} req/s   p50 {p50:7.1f} ms   p99 {p99:7.1f} ms")
        return rate, p50, p99

    print(
        f"\n{args.rounds} round(s) × {args.requests} requests, concurrency {args.concurrency}, "
        f"{workers} gunicorn workers (median rate over rounds; percentiles over all requests)"
    )
    info_rate, _, _ = summary("GET /info (baseline)", baseline)
    for label in ("POST floor SELECT 1", "POST floor admission"):
        group = [p for p in phases if p.name.startswith(label)]
        if group:
            rate, _, _ = summary(label, group)
            print(f"{'':<28} {rate / info_rate:8.0%} of the baseline")
    read_rate, _, _ = summary("GET check_in_types (auth)", authenticated)
    gate_rate, _, _ = summary("POST checkin", gate)
    ratio = gate_rate / info_rate
    print(f"check-in / baseline: {ratio:.0%} (target ≥ {TARGET_RATIO:.0%})")
    print(f"check-in / authenticated read: {gate_rate / read_rate:.0%}")
    print(f"tickets admitted exactly once with one audit row: {admitted_once}/{checkins}")

    failed = [p for p in phases if p.failures]
    ok = ratio >= TARGET_RATIO and not failed and admitted_once == checkins
    print("RESULT:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

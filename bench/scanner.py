"""The scanner apps' endpoints at 200,000 tickets (CONTRACT §11, §12), on a production-like server.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), from the repository root:

    python bench/scanner.py
    python bench/scanner.py --tickets 20000 --keep-db

It creates a database of its own (the server's name plus `_scanner_bench`), seeds one event of
`--tickets` tickets (`bench/_data.py`), a third of them checked in with their audit rows spread
over an evening, starts gunicorn with `deploy/gunicorn.conf.py` and the production settings,
and measures, each against its target:

- a full sync: following `next_cursor` with `limit=1000` from no cursor until `has_more` is
  false, end to end (≤ 10 s), checking that every ticket came exactly once;
- an empty delta: the last cursor again, p50 over `--calls` calls (≤ 10 ms);
- a batch of 500 distinct check-ins by reference code (≤ 1.5 s), `--batches` times;
- the live counts, p50 over `--calls` calls (≤ 100 ms);
- the peak RSS of the server's workers (VmHWM), before and after the full sync.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import seed  # noqa: E402
from bench._harness import Gunicorn, call, own_database, percentile, release_database  # noqa: E402

TARGETS = {"full sync s": 10.0, "empty delta p50 ms": 10.0, "batch s": 1.5, "stats p50 ms": 100.0}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=200_000)
    parser.add_argument("--calls", type=int, default=200, help="Calls per p50.")
    parser.add_argument("--batches", type=int, default=3, help="Batches of 500 to time.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="Default: the config's.")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def check_in_a_third(event_id: int) -> None:
    """Every third ticket used, with its audit row, at times over four hours (for the stats)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
        cursor.execute(
            "UPDATE tickets_ticket SET status = 'used',"
            " used_at = now() - (id %% 240) * interval '1 minute'"
            " WHERE event_id = %s AND id %% 3 = 0",
            [event_id],
        )
        cursor.execute(
            "INSERT INTO tickets_checkinlog (ticket_id, event_id, action, at, note, created_at)"
            " SELECT id, event_id, 'check_in', used_at, '', now() FROM tickets_ticket"
            " WHERE event_id = %s AND status = 'used'",
            [event_id],
        )
        cursor.execute("ANALYZE")
        cursor.execute("VACUUM tickets_ticket")
        cursor.execute("VACUUM tickets_checkinlog")


def peak_rss_mb(server: Gunicorn) -> dict[int, tuple[float, float]]:
    """Each worker's (current, peak) resident set, MB."""
    sizes = {}
    for pid in server.worker_pids():
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        sizes[pid] = tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))
    return sizes


def main() -> int:
    args = parse_args()
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = args.port or sock.getsockname()[1]
    bench_url, env = own_database(
        "scanner_bench", API_RATE_LIMIT="100000000/m", CACHE_KEY_PREFIX="scanner-bench"
    )
    started = time.monotonic()
    data = seed(tickets=args.tickets, gates=2, label="scanner")
    check_in_a_third(data.event_id)
    print(f"seeded {args.tickets:,} tickets in {time.monotonic() - started:.1f} s", flush=True)
    from tickets.models import Ticket

    active_codes = list(
        Ticket.objects.filter(event_id=data.event_id, status="active")
        .order_by("id")
        .values_list("reference_code", flat=True)[: 500 * args.batches]
    )
    token = data.gate_tokens[0]
    event = data.event_path
    server = Gunicorn(port=port, env=env, workers=args.workers, name="scanner-bench")
    server.start()
    figures: dict[str, float] = {}
    try:
        server.wait_ready()
        call("GET", port, f"{event}/tickets/sync?limit=1", token=token)  # warm each path once
        call("GET", port, f"{event}/check_in_stats", token=token)
        before = peak_rss_mb(server)

        seen: set[int] = set()
        repeats, pages, cursor, samples = 0, 0, None, []
        started = time.monotonic()
        while True:
            path = f"{event}/tickets/sync?limit=1000" + (f"&cursor={cursor}" if cursor else "")
            reply = call("GET", port, path, token=token)
            assert reply.status == 200, reply.raw
            pages += 1
            for ticket in reply.body["tickets"]:
                repeats += ticket["id"] in seen
                seen.add(ticket["id"])
            cursor = reply.body["next_cursor"]
            if pages % 50 == 0:  # the workers' memory while the sync streams
                samples.append(max(rss for rss, _ in peak_rss_mb(server).values()))
            if not reply.body["has_more"]:
                break
        figures["full sync s"] = time.monotonic() - started
        after = peak_rss_mb(server)
        assert len(seen) == args.tickets, (len(seen), args.tickets)
        print(
            f"full sync: {len(seen):,} tickets in {pages} pages, {repeats} repeats, "
            f"{figures['full sync s']:.2f} s; largest worker RSS every 50 pages (MB): "
            + ", ".join(f"{mb:.0f}" for mb in samples),
            flush=True,
        )

        empty = []
        for _ in range(args.calls):
            reply = call("GET", port, f"{event}/tickets/sync?cursor={cursor}", token=token)
            assert reply.status == 200 and reply.body["tickets"] == [], reply.raw
            empty.append(reply.elapsed)
        figures["empty delta p50 ms"] = percentile(empty, 50) * 1000

        batch_times = []
        scanned_at = (datetime.now(UTC) - timedelta(minutes=30)).isoformat()
        for b in range(args.batches):
            codes = active_codes[b * 500 : (b + 1) * 500]
            scans = [
                {"id": f"bench-{b}-{i:04d}", "reference_code": code, "used_at": scanned_at}
                for i, code in enumerate(codes)
            ]
            reply = call("POST", port, f"{event}/checkins", token=token, json_body={"scans": scans})
            assert reply.status == 200 and reply.body["success"], reply.raw
            batch_times.append(reply.elapsed)
        figures["batch s"] = max(batch_times)
        print("batches of 500 (s): " + ", ".join(f"{t:.3f}" for t in batch_times), flush=True)

        stats = []
        for _ in range(args.calls):
            reply = call("GET", port, f"{event}/check_in_stats", token=token)
            assert reply.status == 200, reply.raw
            stats.append(reply.elapsed)
        figures["stats p50 ms"] = percentile(stats, 50) * 1000
        print(f"stats: {reply.body['tickets']}, {len(reply.body['timeline'])} buckets")
    finally:
        server.stop()
        release_database(bench_url, keep=args.keep_db)

    print("\nfigure                 value    target")
    for name, value in figures.items():
        verdict = "ok" if value <= TARGETS[name] else "MISSED"
        print(f"{name:<20} {value:>8.2f} {TARGETS[name]:>8.2f}  {verdict}")
    for pid, (rss, peak) in after.items():
        print(
            f"worker {pid}: RSS {before.get(pid, (0, 0))[0]:.0f} MB before the sync, "
            f"{rss:.0f} MB after, peak {peak:.0f} MB"
        )
    return 0 if all(v <= TARGETS[k] for k, v in figures.items()) else 1


if __name__ == "__main__":
    sys.exit(main())

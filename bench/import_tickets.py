"""`import_tickets` at 10,000 rows: how long, and does its memory stay flat as the file grows?

Run from the repository root, on PostgreSQL (`DATABASE_URL`) for figures that mean something:

    python bench/import_tickets.py                 # 10,000 rows
    python bench/import_tickets.py --rows 50000
    python bench/import_tickets.py --subscribed    # with a webhook endpoint wanting every event

It migrates the database, creates an organizer with two active events of two ticket types
each, writes CSV files (half the rows name the ticket type, half give its id; every row has an
external_id), and runs `manage.py import_tickets` as an operator would, in its own process:

1. a file of N/10 rows into the first event;
2. the file of N rows into the second event, timed (wall clock and the process's CPU time);
3. the same N-row file again: every row is already imported (the idempotent re-run), timed.

For each run it reads the process's peak resident memory (`getrusage`, max RSS). A streamed
import peaks at about the same height whatever the size of the file; one that held the file or
its tickets would grow with it. Targets: under 5 s for 10,000 rows (2,000 rows/s, process start
included), and the N-row run's peak within 1.2x of the N/10-row run's. The bench's events are
deleted at the end (`--keep` keeps them).

With `--subscribed`, the organizer has a webhook endpoint (on 127.0.0.1, never called: no
worker runs) subscribed to every event type, so each created ticket also records its
`ticket.created` event in the import's transactions; the same 5 s target holds.
"""

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ticketing.settings.test")

import django  # noqa: E402

django.setup()

from datetime import timedelta  # noqa: E402

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from events.models import Event, TicketType  # noqa: E402
from organizers.models import Organizer  # noqa: E402
from tickets.models import Order, Ticket  # noqa: E402
from webhooks.models import WebhookEvent  # noqa: E402
from webhooks.services import webhook_endpoint_create  # noqa: E402

TARGET_SECONDS = 5.0
TARGET_MEMORY_RATIO = 1.2


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="Keep the bench's events.")
    parser.add_argument(
        "--subscribed",
        action="store_true",
        help="Give the organizer a webhook endpoint subscribed to every event type.",
    )
    return parser.parse_args()


def make_event(organizer: Organizer, rows: int) -> tuple[Event, list[TicketType]]:
    now = timezone.now()
    event = Event.objects.create(
        organizer=organizer,
        title=f"Import bench {rows} rows",
        status=Event.Status.ACTIVE,
        start_at=now + timedelta(days=30),
        end_at=now + timedelta(days=30, hours=6),
    )
    types = [
        TicketType.objects.create(event=event, name=name, price=price, quantity=rows)
        for name, price in (("Regular", 150000), ("VIP", 450000))
    ]
    return event, types


def write_csv(path: Path, rows: int, types: list[TicketType]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["firstname", "lastname", "email", "phone", "ticket_type", "external_id"])
        for i in range(rows):
            ticket_type = types[i % 2]
            writer.writerow(
                [
                    f"Holder{i}",
                    f"Bench{i % 977}",
                    f"holder{i}@bench.example.com",
                    f"081{i % 10_000_000:07d}",
                    ticket_type.name if i % 4 < 2 else str(ticket_type.pk),
                    f"bench-{i}",
                ]
            )


def run_import(event: Event, path: Path) -> dict:
    """One `manage.py import_tickets` process: wall and CPU seconds, peak RSS (MiB), output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_tickets", str(event.pk), str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"import_tickets failed:\n{completed.stdout}\n{completed.stderr}")
    return {
        "wall": wall,
        "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        # RUSAGE_CHILDREN keeps the largest child so far: runs go from small to large, so a
        # larger figure belongs to this run (an equal one means "no higher than before").
        "max_rss": after.ru_maxrss / 1024,
        "output": completed.stdout,
    }


def subscribe_everything(organizer: Organizer) -> None:
    """An endpoint wanting every event type, registered as the API would (its URL check
    refuses 127.0.0.1 unless WEBHOOK_ALLOW_PRIVATE_URLS: allowed for this one call)."""
    with override_settings(WEBHOOK_ALLOW_PRIVATE_URLS=True):
        webhook_endpoint_create(
            organizer_id=organizer.pk, url="http://127.0.0.1:9/bench", event_types=["*"]
        )


def delete_events(organizer: Organizer) -> None:
    WebhookEvent.objects.filter(organizer=organizer).delete()
    events = Event.objects.filter(organizer=organizer)
    Ticket.objects.filter(event__in=events).delete()
    Order.objects.filter(event__in=events).delete()
    TicketType.objects.filter(event__in=events).delete()
    events.delete()
    organizer.delete()


def main() -> None:
    args = parse_args()
    if connection.vendor != "postgresql":
        print("Note: not PostgreSQL; set DATABASE_URL=postgres://... for meaningful figures.")
    call_command("migrate", verbosity=0)
    organizer = Organizer.objects.create(name="Import bench", slug=f"import-bench-{time.time_ns()}")
    small_rows = max(args.rows // 10, 1)
    if args.subscribed:
        subscribe_everything(organizer)
    try:
        with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
            small_event, small_types = make_event(organizer, small_rows)
            small_path = Path(tmp) / "small.csv"
            write_csv(small_path, small_rows, small_types)
            event, types = make_event(organizer, args.rows)
            path = Path(tmp) / "tickets.csv"
            write_csv(path, args.rows, types)
            size_mib = path.stat().st_size / 2**20

            print(f"importing {small_rows:,} rows...", file=sys.stderr)
            small = run_import(small_event, small_path)
            print(f"importing {args.rows:,} rows...", file=sys.stderr)
            large = run_import(event, path)
            print("importing them again (idempotent)...", file=sys.stderr)
            rerun = run_import(event, path)
            created = Ticket.objects.filter(event=event).count()
            recorded = WebhookEvent.objects.filter(
                organizer=organizer, type=WebhookEvent.Type.TICKET_CREATED
            ).count()
    finally:
        if not args.keep:
            delete_events(organizer)

    expected = f"already imported (same external_id): {args.rows}"
    expected_events = (args.rows + small_rows) if args.subscribed else 0
    if created != args.rows or expected not in rerun["output"] or recorded != expected_events:
        raise SystemExit(f"Unexpected outcome:\n{large['output']}\n{rerun['output']}")
    ratio = large["max_rss"] / small["max_rss"]
    cpus = os.cpu_count()
    load = os.getloadavg()[0]
    print(f"database: {connection.vendor}; machine: {cpus} CPUs, load average {load:.1f}")
    print(f"file: {args.rows:,} rows, {size_mib:.1f} MiB")
    subscribed = "every event type" if args.subscribed else "none"
    print(f"webhook endpoint subscribed to: {subscribed}; ticket.created events: {recorded:,}")
    print(
        f"import:  {large['wall']:7.1f} s wall, {large['cpu']:6.1f} s CPU "
        f"({args.rows / large['wall']:,.0f} rows/s)  target < {TARGET_SECONDS:.0f} s: "
        f"{'met' if large['wall'] < TARGET_SECONDS else 'MISSED'}"
    )
    print(f"re-run:  {rerun['wall']:7.1f} s wall, {rerun['cpu']:6.1f} s CPU (nothing created)")
    print(
        f"peak RSS: {small['max_rss']:.0f} MiB at {small_rows:,} rows, "
        f"{large['max_rss']:.0f} MiB at {args.rows:,} rows: ratio {ratio:.2f}, "
        f"target <= {TARGET_MEMORY_RATIO}: {'met' if ratio <= TARGET_MEMORY_RATIO else 'MISSED'}"
    )


if __name__ == "__main__":
    main()

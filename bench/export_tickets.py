"""`export_tickets` of a large event: how long, and does its memory stay flat as the event grows?

Run from the repository root, on PostgreSQL (`DATABASE_URL`) for figures that mean something:

    python bench/export_tickets.py                  # 20,000 and 200,000 tickets
    python bench/export_tickets.py --tickets 500000

It creates two events in bulk (a tenth of the tickets, then all of them) and
runs `manage.py export_tickets <event> -o <file>` for each, in its own process, as an operator
would, reading the wall time and the process's peak resident memory (`getrusage`, max RSS).
A streamed export peaks at about the same height whatever the event's size; one that held the
rows would grow with them. Target: the large run's peak within 1.2x of the small run's. The
bench's events are deleted at the end (`--keep` keeps them).
"""

import argparse
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
from django.utils import timezone  # noqa: E402

from events.models import Event, TicketType  # noqa: E402
from organizers.models import Organizer  # noqa: E402
from tickets.models import Order, Ticket  # noqa: E402

TARGET_MEMORY_RATIO = 1.2
BATCH = 5000


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=200_000)
    parser.add_argument("--keep", action="store_true", help="Keep the bench's events.")
    return parser.parse_args()


def make_event(organizer: Organizer, tickets: int) -> int:
    """An active event with `tickets` tickets, four to an order, inserted in batches."""
    now = timezone.now()
    event = Event.objects.create(
        organizer=organizer,
        title=f"Export bench {tickets}",
        status=Event.Status.ACTIVE,
        start_at=now + timedelta(days=30),
        end_at=now + timedelta(days=30, hours=6),
    )
    ticket_type = TicketType.objects.create(
        event=event, name="Regular", price=150000, quantity=tickets, sold_count=tickets
    )
    for start in range(0, tickets, BATCH):
        count = min(BATCH, tickets - start)
        orders = Order.objects.bulk_create(
            Order(
                event=event,
                status=Order.Status.PAID,
                buyer_firstname="Buyer",
                buyer_lastname=f"B{start + i}",
                buyer_email=f"buyer{start + i}@bench.example.com",
                paid_at=now,
            )
            for i in range(0, count, 4)
        )
        Ticket.objects.bulk_create(
            Ticket(
                event=event,
                order=orders[i // 4],
                ticket_type=ticket_type,
                firstname=f"Holder{start + i}",
                lastname="Bench",
                email=f"holder{start + i}@bench.example.com",
                phone="+66812345678",
                reference_code=f"X{start + i:09d}",
            )
            for i in range(count)
        )
    return event.pk


def run_export(event_id: int, path: Path) -> dict:
    """One `manage.py export_tickets` process: wall seconds, peak RSS (MiB), rows written."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "export_tickets", str(event_id), "-o", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with path.open("rb") as handle:
        rows = sum(1 for _ in handle) - 1
    # RUSAGE_CHILDREN keeps the largest child so far; runs go from small to large.
    return {"wall": wall, "max_rss": usage.ru_maxrss / 1024, "rows": rows}


def delete_events(organizer: Organizer) -> None:
    """Delete the bench's data a batch at a time (one DELETE of 200,000 ids has too many
    parameters)."""
    events = Event.objects.filter(organizer=organizer)
    for model in (Ticket, Order):
        while ids := list(
            model.objects.filter(event__in=events).values_list("pk", flat=True)[:BATCH]
        ):
            model.objects.filter(pk__in=ids).delete()
    TicketType.objects.filter(event__in=events).delete()
    events.delete()
    organizer.delete()


def main() -> None:
    args = parse_args()
    if connection.vendor != "postgresql":
        print("Note: not PostgreSQL; set DATABASE_URL=postgres://... for meaningful figures.")
    call_command("migrate", verbosity=0)
    organizer = Organizer.objects.create(name="Export bench", slug=f"export-bench-{time.time_ns()}")
    small_count = max(args.tickets // 10, 1)
    try:
        print(f"creating {small_count:,} and {args.tickets:,} tickets...", file=sys.stderr)
        small_event = make_event(organizer, small_count)
        large_event = make_event(organizer, args.tickets)
        with tempfile.TemporaryDirectory(prefix="export-bench-") as tmp:
            print("exporting...", file=sys.stderr)
            small = run_export(small_event, Path(tmp) / "small.csv")
            large = run_export(large_event, Path(tmp) / "large.csv")
            size_mib = (Path(tmp) / "large.csv").stat().st_size / 2**20
    finally:
        if not args.keep:
            delete_events(organizer)

    if (small["rows"], large["rows"]) != (small_count, args.tickets):
        raise SystemExit(f"Unexpected row counts: {small['rows']}, {large['rows']}")
    ratio = large["max_rss"] / small["max_rss"]
    print(f"database: {connection.vendor}; machine: {os.cpu_count()} CPUs")
    print(
        f"export: {small_count:,} tickets in {small['wall']:.1f} s, "
        f"{args.tickets:,} tickets in {large['wall']:.1f} s "
        f"({args.tickets / large['wall']:,.0f} rows/s, {size_mib:.1f} MiB of CSV)"
    )
    print(
        f"peak RSS: {small['max_rss']:.0f} MiB at {small_count:,} tickets, "
        f"{large['max_rss']:.0f} MiB at {args.tickets:,}: ratio {ratio:.2f}, "
        f"target <= {TARGET_MEMORY_RATIO}: {'met' if ratio <= TARGET_MEMORY_RATIO else 'MISSED'}"
    )


if __name__ == "__main__":
    main()

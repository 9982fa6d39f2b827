"""The attendee's ticket page and QR images (CONTRACT §14): server time per request.

Run on PostgreSQL (`DATABASE_URL`), from the repository root, one bench at a time:

    python bench/ticket_page.py
    python bench/ticket_page.py --event 12     # reuse an event made by an earlier run

It migrates the database, creates an event of 20,000 tickets (by default; one in ten used) and
times, through the whole Django stack in this process (Django's test client: every middleware,
URL routing, the token lookup in PostgreSQL, the template or the image, the headers; not the
HTTP parsing of a server or the network), requests for tickets picked at random:

- `GET /t/<token>` (the page), in English and in Thai (Accept-Language);
- `GET /t/<token>/qr.png` for a code never rendered before in this process (`cold`: segno
  renders it) and for one already rendered (`warm`: the LRU cache answers);
- `GET /t/<token>/qr.svg` (cold and warm), and a revalidation with `If-None-Match` (304).

It prints p50 and p99 in milliseconds. Targets: page p50 <= 15 ms, qr.png p50 <= 10 ms.
"""

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ticketing.settings.test")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # no log line per request

import django  # noqa: E402

django.setup()

from datetime import timedelta  # noqa: E402

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from events.models import Event, TicketType  # noqa: E402
from organizers.models import Organizer  # noqa: E402
from tickets.models import Order, Ticket  # noqa: E402
from tickets.qr import qr_png, qr_svg  # noqa: E402

TARGETS = {"page (en)": 15.0, "page (th)": 15.0, "qr.png cold": 10.0, "qr.png warm": 10.0}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=20_000, help="Tickets in the event.")
    parser.add_argument("--repeat", type=int, default=500, help="Timed requests per kind.")
    parser.add_argument("--warmup", type=int, default=50, help="Untimed requests per kind.")
    parser.add_argument("--event", type=int, help="Reuse this event.")
    return parser.parse_args()


def make_event(tickets: int) -> int:
    """One organizer, event and ticket type, one order, `tickets` active tickets (1 in 10 used)."""
    now = timezone.now()
    organizer = Organizer.objects.create(name="Ticket page bench", slug=f"bench-{now:%s%f}")
    event = Event.objects.create(
        organizer=organizer,
        title="Songkran Beats",
        status=Event.Status.ACTIVE,
        location_name="Impact Arena",
        location_address="Muang Thong Thani",
        start_at=now + timedelta(days=7),
        end_at=now + timedelta(days=7, hours=5),
    )
    ticket_type = TicketType.objects.create(
        event=event, name="Regular", price=150000, quantity=tickets
    )
    order = Order.objects.create(
        event=event,
        status=Order.Status.PAID,
        paid_at=now,
        buyer_firstname="Bench",
        buyer_lastname="Buyer",
        buyer_email="bench@example.com",
    )
    Ticket.objects.bulk_create(
        (
            Ticket(
                event=event,
                order=order,
                ticket_type=ticket_type,
                firstname="Somsak",
                lastname=f"Jaidee {i}",
                email=f"holder{i}@example.com",
                reference_code=f"BENCH{i:07d}",
                status=Ticket.Status.USED if i % 10 == 0 else Ticket.Status.ACTIVE,
                used_at=now if i % 10 == 0 else None,
            )
            for i in range(tickets)
        ),
        batch_size=2000,
    )
    return event.pk


def timed(client: Client, path: str, expect: int = 200, **headers) -> float:
    started = time.perf_counter()
    response = client.get(path, **headers)
    elapsed = time.perf_counter() - started
    if response.status_code != expect:
        raise SystemExit(f"GET {path} answered {response.status_code}: {response.content[:300]}")
    return elapsed * 1000


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    args = parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("This bench measures PostgreSQL: set DATABASE_URL=postgres://...")
    call_command("migrate", verbosity=0)
    event_id = args.event or make_event(args.tickets)
    rows = list(
        Ticket.objects.filter(event_id=event_id)
        .exclude(status=Ticket.Status.REVOKED)
        .values_list("page_token", "reference_code")
    )
    needed = 2 * (args.warmup + args.repeat)
    if len(rows) < needed:
        raise SystemExit(f"event {event_id} has {len(rows)} valid tickets; {needed} are needed")
    random.Random(1).shuffle(rows)
    client = Client()
    en, th = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}, {"HTTP_ACCEPT_LANGUAGE": "th-TH,th"}
    qr_png.cache_clear()
    qr_svg.cache_clear()

    def page_en(token, code):
        return timed(client, f"/t/{token}", **en)

    def page_th(token, code):
        return timed(client, f"/t/{token}", **th)

    def png(token, code):
        return timed(client, f"/t/{token}/qr.png")

    def svg(token, code):
        return timed(client, f"/t/{token}/qr.svg")

    def revalidate(token, code):
        etag = client.get(f"/t/{token}/qr.png")["ETag"]
        return timed(client, f"/t/{token}/qr.png", expect=304, HTTP_IF_NONE_MATCH=etag)

    # Cold PNGs use tickets no request has touched yet; the others reuse the first half's.
    fresh, seen = rows[: needed // 2], rows[needed // 2 :]
    kinds = [
        ("qr.png cold", png, fresh),
        ("qr.png warm", png, fresh),
        ("qr.svg cold", svg, fresh),
        ("qr.svg warm", svg, fresh),
        ("page (en)", page_en, seen),
        ("page (th)", page_th, seen),
        ("qr.png 304", revalidate, fresh),
    ]
    print(
        f"\nevent {event_id} ({len(rows):,} valid tickets); {args.repeat} timed requests per kind "
        f"after {args.warmup} untimed, each to a random ticket; in-process Django test client "
        f"(whole middleware and view stack and the PostgreSQL query; no HTTP server); ms"
    )
    print(f"{'request':<13} {'p50':>8} {'p99':>8}  target")
    for name, request, tickets in kinds:
        times = [request(*ticket) for ticket in tickets[: args.warmup + args.repeat]]
        times = times[args.warmup :]
        p50 = statistics.median(times)
        target = TARGETS.get(name)
        verdict = f"<= {target:g} ms {'met' if p50 <= target else 'MISSED'}" if target else "-"
        print(f"{name:<13} {p50:8.2f} {percentile(times, 99):8.2f}  {verdict}")


if __name__ == "__main__":
    main()

"""Read API at scale: does a search or a keyset page cost the same at 200,000 tickets as at 2,000?

Run on PostgreSQL (`DATABASE_URL`), from the repository root:

    python bench/read_api.py                # or: python -m bench.read_api
    python bench/read_api.py --events 12 13  # reuse two events made by an earlier run

It migrates the database, creates two events with `generate_load_data` (2,000 and 200,000
tickets by default) and an application token of their organizer, then times, through the whole
view stack (Django's test client: URL routing, authentication, permissions, filters, pagination,
serialization), each request kind against both events in turn, so that both see the same
machine load:

- search by reference code (`.../tickets/search?reference_code=`), a random code each time;
- the first page of the tickets list;
- a deep page by `page` (90% of the way through);
- a deep keyset page by `min_id` (90% of the way through, `order_by=id`).

It prints p50/p99 in milliseconds and the ratio of the large event's p50 to the small one's.
The target (CONTRACT §6 at scale): search and keyset pages within 1.5× at 200,000 tickets.
"""

import argparse
import io
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ticketing.settings.test")
os.environ.setdefault("RATELIMIT_ENABLE", "0")  # the bench sends far more than 1200/min
os.environ.setdefault("LOG_LEVEL", "WARNING")  # no log line per request

import django  # noqa: E402

django.setup()

from datetime import timedelta  # noqa: E402

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402
from oauth2_provider.models import AccessToken  # noqa: E402

from events.models import Event  # noqa: E402
from oauth_setup.models import Application  # noqa: E402
from tickets.models import Ticket  # noqa: E402

TARGET_RATIO = 1.5


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=2_000, help="Tickets in the small event.")
    parser.add_argument("--large", type=int, default=200_000, help="Tickets in the large event.")
    parser.add_argument("--repeat", type=int, default=200, help="Timed requests per kind.")
    parser.add_argument("--warmup", type=int, default=20, help="Untimed requests per kind.")
    parser.add_argument("--per-page", type=int, default=100)
    parser.add_argument(
        "--events", type=int, nargs=2, metavar=("SMALL_ID", "LARGE_ID"), help="Reuse events."
    )
    return parser.parse_args()


def make_event(tickets: int, organizer_id: int | None) -> int:
    out = io.StringIO()
    options = {"tickets": tickets, "seed": tickets, "stdout": out}
    if organizer_id is not None:
        options["organizer"] = organizer_id
    call_command("generate_load_data", **options)
    return int(out.getvalue().strip().splitlines()[-1])


def app_token(organizer_id: int) -> str:
    application = Application.objects.create(
        name="read API bench",
        organizer_id=organizer_id,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
    )
    token = AccessToken.objects.create(
        token=f"bench-{time.time_ns()}",
        application=application,
        scope="public",
        expires=timezone.now() + timedelta(hours=2),
    )
    return token.token


class Target:
    """One event and the request paths to time against it."""

    def __init__(self, event: Event, per_page: int):
        self.event = event
        self.base = f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets"
        ids = list(Ticket.objects.filter(event=event).order_by("id").values_list("id", flat=True))
        self.size = len(ids)
        self.per_page = per_page
        self.deep_page = max(1, int(0.9 * self.size / per_page))
        self.deep_min_id = ids[int(0.9 * len(ids))]
        codes = Ticket.objects.filter(event=event).values_list("reference_code", flat=True)
        self.codes = random.Random(1).sample(list(codes), min(1000, self.size))

    def path(self, kind: str, i: int) -> str:
        if kind == "search":
            # Lower case with spaces: the lookup normalizes, as gates send what they scan.
            return f"{self.base}/search?reference_code=+{self.codes[i % len(self.codes)].lower()}+"
        if kind == "first page":
            return f"{self.base}?per_page={self.per_page}"
        if kind == "deep page":
            return f"{self.base}?per_page={self.per_page}&page={self.deep_page}"
        if kind == "keyset page":
            return f"{self.base}?per_page={self.per_page}&order_by=id&min_id={self.deep_min_id}"
        raise ValueError(kind)


def timed_get(client: Client, path: str, token: str) -> float:
    started = time.perf_counter()
    response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
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

    if args.events:
        small_event = Event.objects.get(id=args.events[0])
        large_event = Event.objects.get(id=args.events[1])
        if small_event.organizer_id != large_event.organizer_id:
            raise SystemExit("Both events must belong to the same organizer.")
    else:
        print(f"Creating events of {args.small:,} and {args.large:,} tickets...", file=sys.stderr)
        small_id = make_event(args.small, None)
        small_event = Event.objects.get(id=small_id)
        large_event = Event.objects.get(id=make_event(args.large, small_event.organizer_id))
    token = app_token(small_event.organizer_id)
    small, large = Target(small_event, args.per_page), Target(large_event, args.per_page)
    client = Client()

    kinds = ["search", "first page", "deep page", "keyset page"]
    print(
        f"\nevents {small.event.id} ({small.size:,} tickets) and {large.event.id} "
        f"({large.size:,} tickets); per_page={args.per_page}; {args.repeat} timed requests "
        f"each, interleaved; milliseconds"
    )
    print(
        f"{'request':<12} {'small p50':>10} {'small p99':>10} {'large p50':>10} "
        f"{'large p99':>10} {'ratio p50':>10}  target"
    )
    results = {}
    for kind in kinds:
        for i in range(args.warmup):
            timed_get(client, small.path(kind, i), token)
            timed_get(client, large.path(kind, i), token)
        small_times, large_times = [], []
        for i in range(args.repeat):
            small_times.append(timed_get(client, small.path(kind, i), token))
            large_times.append(timed_get(client, large.path(kind, i), token))
        s50, l50 = statistics.median(small_times), statistics.median(large_times)
        ratio = l50 / s50
        targeted = kind in ("search", "keyset page")
        verdict = ("met" if ratio <= TARGET_RATIO else "MISSED") if targeted else "-"
        results[kind] = ratio
        print(
            f"{kind:<12} {s50:10.2f} {percentile(small_times, 99):10.2f} {l50:10.2f} "
            f"{percentile(large_times, 99):10.2f} {ratio:10.2f}  {verdict}"
        )
    print(
        f"\nTarget: search and keyset page at {large.size:,} tickets within {TARGET_RATIO}x "
        f"their time at {small.size:,}. Reuse these events with --events "
        f"{small.event.id} {large.event.id}."
    )


if __name__ == "__main__":
    main()

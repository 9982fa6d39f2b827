"""Create one large event for benchmarks: ticket types, orders and tickets in bulk.

On PostgreSQL rows go in with COPY into ids reserved from the sequences (200,000 tickets take
seconds); elsewhere with `bulk_create` in batches. The ticket types' capacity counters are set to
what was created, so the data obeys the same rules as data made through the services. Progress
goes to stderr; stdout is the new event's id alone, so scripts can read it.
"""

import random
import time
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from devtools.statements import rows_bulk_create, rows_copy, statistics_refresh
from events.models import CheckInType, Event, TicketType
from organizers.models import Organizer
from tickets.codes import page_token_generate
from tickets.models import Order, Ticket

CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # no 0 O 1 I (CONTRACT §7)


class Progress:
    """A one-line progress bar on the command's stderr."""

    def __init__(self, label: str, total: int, stream, width: int = 30):
        self.label, self.total, self.width = label, max(total, 1), width
        self.stream = stream
        self.started = time.monotonic()
        self.done = 0

    def advance(self, n: int) -> None:
        self.done += n
        filled = int(self.width * self.done / self.total)
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self.started
        end = "\n" if self.done >= self.total else ""
        self.stream.write(
            f"\r{self.label:<8} [{bar}] {self.done:>9,}/{self.total:,} {elapsed:6.1f}s",
            ending=end,
        )
        self.stream.flush()


class Command(BaseCommand):
    help = "Create an event with many tickets (benchmarks). Prints the event id on stdout."

    def add_arguments(self, parser):
        parser.add_argument("--tickets", type=int, default=2000, help="Tickets to create.")
        parser.add_argument(
            "--organizer", type=int, help="Organizer id; a new organizer when omitted."
        )
        parser.add_argument("--ticket-types", type=int, default=3)
        parser.add_argument(
            "--tickets-per-order", type=int, default=4, help="Tickets in each order (max)."
        )
        parser.add_argument(
            "--check-in-types", type=int, default=0, help="Check-in types (0: simple mode)."
        )
        parser.add_argument(
            "--used-percent", type=int, default=15, help="Share of tickets already used."
        )
        parser.add_argument(
            "--revoked-percent", type=int, default=5, help="Share of tickets revoked."
        )
        parser.add_argument("--title", default=None)
        parser.add_argument("--seed", type=int, default=None, help="For repeatable data.")

    def handle(self, *args, **options):
        n_tickets = options["tickets"]
        n_types = options["ticket_types"]
        per_order = options["tickets_per_order"]
        used_pct, revoked_pct = options["used_percent"], options["revoked_percent"]
        if not 1 <= n_tickets <= 10_000_000:
            raise CommandError("--tickets must be between 1 and 10,000,000.")
        if not 1 <= n_types <= 100 or not 1 <= per_order <= 100:
            raise CommandError("--ticket-types and --tickets-per-order must be 1..100.")
        if used_pct < 0 or revoked_pct < 0 or used_pct + revoked_pct > 100:
            raise CommandError("--used-percent and --revoked-percent must add up to 0..100.")
        if not 0 <= options["check_in_types"] <= 50:
            raise CommandError("--check-in-types must be 0..50.")
        rng = random.Random(options["seed"])
        started = time.monotonic()

        with transaction.atomic():
            organizer = self._organizer(options["organizer"])
            event, ticket_types = self._event(
                organizer, n_types, options["check_in_types"], options["title"], n_tickets
            )
            orders, tickets = self._rows(
                event, ticket_types, n_tickets, per_order, used_pct, revoked_pct, rng
            )
            self.stderr.write(f"rows built in {time.monotonic() - started:.1f}s")
            write = rows_copy if connection.vendor == "postgresql" else rows_bulk_create
            write(Order, orders, Progress("orders", len(orders), self.stderr))
            for ticket in tickets:
                ticket["order_id"] = ticket.pop("order")["id"]
            write(Ticket, tickets, Progress("tickets", len(tickets), self.stderr))
            self._set_counters(ticket_types, tickets)
            committing = time.monotonic()
        self.stderr.write(f"committed in {time.monotonic() - committing:.1f}s")

        if connection.vendor == "postgresql":
            analyzing = time.monotonic()
            statistics_refresh([Order._meta.db_table, Ticket._meta.db_table])
            self.stderr.write(f"analyzed in {time.monotonic() - analyzing:.1f}s")
        self.stderr.write(
            f"Event {event.id} of organizer {organizer.id}: {n_tickets:,} tickets, "
            f"{len(orders):,} orders in {time.monotonic() - started:.1f}s"
        )
        self.stdout.write(str(event.id))

    def _organizer(self, organizer_id: int | None) -> Organizer:
        if organizer_id is None:
            suffix = timezone.now().strftime("%Y%m%d%H%M%S%f")
            return Organizer.objects.create(name="Load test organizer", slug=f"load-{suffix}")
        organizer = Organizer.objects.filter(id=organizer_id).first()
        if organizer is None:
            raise CommandError(f"Organizer {organizer_id} does not exist.")
        return organizer

    def _event(self, organizer, n_types, n_check_in_types, title, n_tickets):
        start = timezone.now() + timedelta(days=30)
        event = Event.objects.create(
            organizer=organizer,
            title=title or f"Load test ({n_tickets:,} tickets)",
            status=Event.Status.ACTIVE,
            location_name="Impact Arena",
            start_at=start,
            end_at=start + timedelta(hours=6),
        )
        ticket_types = [
            TicketType.objects.create(
                event=event,
                name=f"Zone {chr(ord('A') + i % 26)}{i // 26 or ''}",
                price=100_000 + 50_000 * i,
                quantity=n_tickets,  # lowered to what was sold by _set_counters
                position=i,
            )
            for i in range(n_types)
        ]
        for i in range(n_check_in_types):
            CheckInType.objects.create(event=event, name=f"Day {i + 1}", position=i)
        return event, ticket_types

    def _rows(self, event, ticket_types, n_tickets, per_order, used_pct, revoked_pct, rng):
        """Column values by attname; plain dicts, as model instances cost too much here."""
        now = timezone.now()
        codes = _unique_codes(n_tickets, rng)
        orders: list[dict] = []
        tickets: list[dict] = []
        order = None
        for i in range(n_tickets):
            if i % per_order == 0:
                order = {
                    "event_id": event.id,
                    "status": Order.Status.PAID.value,
                    "kind": Order.Kind.NORMAL.value,
                    "buyer_id": None,
                    "buyer_firstname": f"Buyer{i}",
                    "buyer_lastname": "Load",
                    "buyer_email": f"buyer{i}@load.example.com",
                    "buyer_phone": f"+6681{i % 10_000_000:07d}",
                    "buyer_phone_country": "TH",
                    "paid_at": now,
                    "cancelled_at": None,
                    "created_at": now,
                    "updated_at": now,
                }
                orders.append(order)
            roll = rng.randrange(100)
            if roll < revoked_pct:
                status = Ticket.Status.REVOKED.value
            elif roll < revoked_pct + used_pct:
                status = Ticket.Status.USED.value
            else:
                status = Ticket.Status.ACTIVE.value
            tickets.append(
                {
                    "event_id": event.id,
                    "order": order,  # its id is known once the orders are written
                    "ticket_type_id": ticket_types[i % len(ticket_types)].id,
                    "holder_id": None,
                    "status": status,
                    "kind": Ticket.Kind.NORMAL.value,
                    "firstname": f"Holder{i}",
                    "lastname": "Load",
                    "email": f"holder{i}@load.example.com",
                    "phone": f"+6689{i % 10_000_000:07d}",
                    "reference_code": codes[i],
                    "page_token": page_token_generate(),
                    "external_id": None,
                    "nfc_uid": None,
                    "issued_via_api": False,
                    "revoke_note": "Load test" if status == Ticket.Status.REVOKED else None,
                    "used_at": now if status == Ticket.Status.USED else None,
                    "registered_at": now,
                    "created_at": now,
                    "updated_at": now,
                    "change_xid": 0,  # the sync feed's triggers set both (tickets 0005)
                    "change_seq": 0,
                }
            )
        return orders, tickets

    def _set_counters(self, ticket_types, tickets):
        sold = {ticket_type.id: 0 for ticket_type in ticket_types}
        for ticket in tickets:
            if ticket["status"] != Ticket.Status.REVOKED:
                sold[ticket["ticket_type_id"]] += 1
        for ticket_type in ticket_types:
            # Capacity a little above what was sold, so creation benchmarks have room.
            TicketType.objects.filter(id=ticket_type.id).update(
                sold_count=sold[ticket_type.id],
                quantity=sold[ticket_type.id] + max(100, sold[ticket_type.id] // 10),
            )


def _unique_codes(n: int, rng: random.Random) -> list[str]:
    codes: set[str] = set()
    while len(codes) < n:
        codes.add("".join(rng.choices(CODE_ALPHABET, k=8)))
    result = list(codes)
    rng.shuffle(result)
    return result

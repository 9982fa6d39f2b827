"""`manage.py export_tickets <event_id>`: an event's tickets (or orders) as CSV, streamed."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from events.models import Event
from tickets.models import Order, Ticket
from tickets.services.exporting import orders_csv, tickets_csv


class Command(BaseCommand):
    help = (
        "Write an event's tickets (or, with --orders, its orders) as CSV to stdout or a file. "
        "Rows are read from the database a chunk at a time, so memory stays flat whatever the "
        "event's size. Times are local, prices in baht."
    )

    def add_arguments(self, parser):
        parser.add_argument("event_id", type=int)
        parser.add_argument("--orders", action="store_true", help="Export orders, not tickets.")
        parser.add_argument(
            "-o", "--output", type=Path, help="Write to this file (default: stdout)."
        )

    def handle(self, *args, **options):
        event = Event.objects.filter(pk=options["event_id"]).first()
        if event is None:
            raise CommandError(f"Event {options['event_id']} does not exist.")
        if options["orders"]:
            lines = orders_csv(Order.objects.filter(event_id=event.pk))
        else:
            lines = tickets_csv(Ticket.objects.filter(event_id=event.pk))
        output: Path | None = options["output"]
        if output is None:
            # Past the command's wrapper, which would add a line ending to each line.
            self.stdout._out.writelines(lines)
            return
        rows = -1  # the header is not a row
        with output.open("w", newline="", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line)
                rows += 1
        self.stderr.write(f"Wrote {rows} rows to {output}.")

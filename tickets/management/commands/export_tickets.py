"""`manage.py export_tickets <event_id>`: an event's tickets (or orders) as CSV or XLSX."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from events.models import Event
from tickets.models import Order, Ticket
from tickets.services.exporting import orders_csv, orders_xlsx, tickets_csv, tickets_xlsx


class Command(BaseCommand):
    help = (
        "Write an event's tickets (or, with --orders, its orders) as CSV to stdout or a file, "
        "or as an Excel workbook (--format xlsx, or an -o file ending in .xlsx). The CSV starts "
        "with a UTF-8 byte order mark, so that Excel reads Thai names right. Rows are read from "
        "the database a chunk at a time, so memory stays flat whatever the event's size. Times "
        "are local, prices in baht."
    )

    def add_arguments(self, parser):
        parser.add_argument("event_id", type=int)
        parser.add_argument("--orders", action="store_true", help="Export orders, not tickets.")
        parser.add_argument(
            "-o", "--output", type=Path, help="Write to this file (default: stdout)."
        )
        parser.add_argument(
            "--format",
            choices=("csv", "xlsx"),
            help="csv (the default) or xlsx (the default for an -o file ending in .xlsx).",
        )

    def handle(self, *args, **options):
        event = Event.objects.filter(pk=options["event_id"]).first()
        if event is None:
            raise CommandError(f"Event {options['event_id']} does not exist.")
        output: Path | None = options["output"]
        fmt = options["format"] or (
            "xlsx" if output is not None and output.suffix.lower() == ".xlsx" else "csv"
        )
        model = Order if options["orders"] else Ticket
        rows = model.objects.filter(event_id=event.pk)
        if fmt == "xlsx":
            if output is None:
                raise CommandError("An XLSX workbook is a binary file: name it with -o.")
            with output.open("wb") as handle:
                written = (orders_xlsx if options["orders"] else tickets_xlsx)(rows, handle)
            self.stderr.write(f"Wrote {written} rows to {output}.")
            return
        lines = (orders_csv if options["orders"] else tickets_csv)(rows)
        if output is None:
            # Past the command's wrapper, which would add a line ending to each line.
            self.stdout._out.writelines(lines)
            return
        written = -1  # the header is not a row
        with output.open("w", newline="", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line)
                written += 1
        self.stderr.write(f"Wrote {written} rows to {output}.")

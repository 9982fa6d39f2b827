"""`manage.py import_tickets <event_id> <file.csv|file.xlsx>`: issue tickets from a CSV file or
the first sheet of an Excel workbook.

Rows are checked as `ticket_create` (the service behind `POST .../tickets`) checks them, so
quotas, holder validation, reference codes and `external_id` idempotency are the API's, but a
batch at a time (`tickets.services.importing`, shared with the admin's import). The file is
read twice, streaming, never whole: first to check it is a readable CSV file or workbook with
the needed columns (nothing is written if not), then to import it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, transaction
from tqdm import tqdm

from events.models import Event
from tickets.exceptions import EventNotActive
from tickets.services.common import Actor
from tickets.services.csv_input import FileUnreadable, Header, csv_header
from tickets.services.import_files import FORMATS, file_rows, import_format
from tickets.services.importing import IMPORT_BATCH_ROWS, ImportRollback, TicketImporter


@dataclass
class Tally:
    rows: int = 0
    created: int = 0
    existing: int = 0
    rejected: int = 0


class Progress:
    """A tqdm bar on stderr on a terminal; elsewhere (a log, a pipe) a line every 10%."""

    def __init__(self, stream, total: int, enabled: bool):
        self.stream, self.total, self.enabled = stream, max(total, 1), enabled
        self.bar = None
        if enabled and stream.isatty():
            self.bar = tqdm(total=total, unit="rows", file=stream._out, dynamic_ncols=True)
        self.done = 0

    def update(self, count: int) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(count)
            return
        for done in range(self.done + 1, self.done + count + 1):
            if (done * 100 // self.total) // 10 > ((done - 1) * 100 // self.total) // 10:
                self.stream.write(f"{done}/{self.total} rows ({done * 100 // self.total}%)")
        self.done += count

    def write(self, stdout, text: str) -> None:
        """A line on stdout that does not tear the bar."""
        if self.bar is not None:
            self.bar.clear()
        stdout.write(text)
        if self.bar is not None:
            self.bar.refresh()

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Command(BaseCommand):
    help = (
        "Issue tickets for an event from a CSV file (.csv) or an Excel workbook (.xlsx, its "
        "first sheet) with the columns firstname, lastname, email, phone, ticket_type (id or "
        "name) and optionally external_id and reference_code. Rows with an external_id already "
        "imported are skipped (idempotent). By default each good row is saved and rejected rows "
        "are reported by line; --atomic saves nothing unless every row is good."
    )

    def add_arguments(self, parser):
        parser.add_argument("event_id", type=int)
        parser.add_argument("file", type=Path, help="A .csv file or an .xlsx workbook.")
        parser.add_argument(
            "--format",
            choices=sorted(set(FORMATS.values())),
            help="csv or xlsx, for a file whose name does not end in .csv or .xlsx.",
        )
        parser.add_argument(
            "--atomic",
            action="store_true",
            help="All or nothing: if any row is rejected, save none (all rows are still checked).",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Check every row against the database and report, then save nothing.",
        )
        parser.add_argument(
            "--notify",
            action="store_true",
            help="Email each new ticket to its holder, through the task workers (default: none).",
        )
        parser.add_argument(
            "--encoding", help="A CSV file's encoding (default UTF-8, BOM allowed)."
        )
        parser.add_argument("--delimiter", help="A CSV file's cell separator (default ',').")

    def handle(self, *args, **options):
        event = Event.objects.filter(pk=options["event_id"]).first()
        if event is None:
            raise CommandError(f"Event {options['event_id']} does not exist.")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file.")
        self._check_format(path, options)

        header, total = self._scan(path, options)
        tally = Tally(rows=total)
        show = options["verbosity"] >= 1
        progress = Progress(self.stderr, total, enabled=show)
        atomic, dry_run = options["atomic"], options["dry_run"]
        # The service logs each ticket it creates; in an import the report below says it once,
        # and 10,000 log lines would bury it (`-v 2` keeps them).
        service_log = logging.getLogger("tickets.services")
        service_log_level = service_log.level
        if options["verbosity"] < 2:
            service_log.setLevel(logging.WARNING)
        try:
            if atomic or dry_run:
                try:
                    with transaction.atomic():
                        self._import(event, path, header, options, tally, progress)
                        if dry_run or tally.rejected:
                            raise ImportRollback
                except ImportRollback:
                    pass
            else:
                self._import(event, path, header, options, tally, progress, commit_batches=True)
        finally:
            progress.finish()
            service_log.setLevel(service_log_level)

        saved = not dry_run and not (atomic and tally.rejected)
        self._summary(event, tally, saved=saved, dry_run=dry_run, atomic=atomic)
        if tally.rejected:
            raise CommandError(
                f"{tally.rejected} row{'s' if tally.rejected != 1 else ''} rejected "
                "(listed above with their line numbers)."
            )

    # --- pass 1: is this a file we can read? -------------------------------------------------

    @staticmethod
    def _check_format(path: Path, options) -> None:
        """Settle options["format"] (from the name unless given) and the CSV options."""
        if options["format"] is None:
            try:
                options["format"] = import_format(path.name)
            except FileUnreadable as exc:
                advice = " Or pass --format csv or --format xlsx."
                raise CommandError(exc.message + advice) from None
        if options["format"] == "xlsx":
            given = [f"--{name}" for name in ("encoding", "delimiter") if options[name]]
            if given:
                raise CommandError(f"{' and '.join(given)}: only for a CSV file.")
            return
        options["encoding"] = options["encoding"] or "utf-8-sig"
        options["delimiter"] = options["delimiter"] or ","
        if len(options["delimiter"]) != 1:
            raise CommandError("--delimiter must be one character.")

    @staticmethod
    def _rows(path: Path, options) -> Iterator[tuple[int, list[str]]]:
        with path.open("rb") as binary:
            yield from file_rows(
                binary,
                options["format"],
                encoding=options["encoding"],
                delimiter=options["delimiter"],
            )

    def _scan(self, path: Path, options) -> tuple[Header, int]:
        """The header and the number of data rows; CommandError if the file is unreadable."""
        header: Header | None = None
        rows = 0
        try:
            for _line, cells in self._rows(path, options):
                if header is None:
                    header = csv_header(cells)
                else:
                    rows += 1
        except FileUnreadable as exc:
            prefix = f"{path}: " if exc.line is not None else ""
            advice = " Save the file as UTF-8 or pass --encoding." if exc.code == "encoding" else ""
            raise CommandError(f"{prefix}{exc.message}{advice}") from None
        if header is None:
            raise CommandError(f"{path}: the file is empty; the first line must name the columns.")
        if header.ignored:
            self.stderr.write(f"Ignoring unknown columns: {', '.join(header.ignored)}.")
        return header, rows

    # --- pass 2: import -----------------------------------------------------------------------

    def _import(self, event, path, header, options, tally, progress, *, commit_batches=False):
        """Create the file's tickets a batch at a time; rejected rows are never written.

        Inside the caller's transaction (`--atomic`, `--dry-run`), or, with `commit_batches`,
        committing each batch: one commit per row would wait for the disk ten thousand times.
        """
        importer = TicketImporter(
            event=event,
            header=header,
            actor=Actor(),
            notify=options["notify"],
            preview=options["dry_run"],
        )
        with closing(self._rows(path, options)) as rows:
            next(rows)  # the header, checked by the scan
            for batch in iter(lambda: list(islice(rows, IMPORT_BATCH_ROWS)), []):
                try:
                    with transaction.atomic():
                        outcomes = importer.import_batch(batch)
                except EventNotActive as exc:
                    raise CommandError(f"{exc.message} No tickets can be issued.") from None
                except DatabaseError as exc:
                    kept = f" Rows before line {batch[0][0]} were saved." if commit_batches else ""
                    raise CommandError(
                        f"lines {batch[0][0]}-{batch[-1][0]}: database error "
                        f"({exc.__class__.__name__}: {exc}).{kept}"
                    ) from exc
                for outcome in outcomes:
                    if outcome.status == "rejected":
                        tally.rejected += 1
                        progress.write(self.stdout, f"line {outcome.line}: {outcome.reason}")
                    elif outcome.status == "existing":
                        tally.existing += 1
                    else:
                        tally.created += 1
                progress.update(len(batch))

    def _summary(self, event, tally: Tally, *, saved: bool, dry_run: bool, atomic: bool) -> None:
        self.stdout.write(f"Event {event.pk} '{event.title}': {tally.rows} rows.")
        verb = "would be created" if dry_run else "created"
        self.stdout.write(f"  tickets {verb}: {tally.created}")
        self.stdout.write(f"  already imported (same external_id): {tally.existing}")
        self.stdout.write(f"  rejected: {tally.rejected}")
        if dry_run:
            self.stdout.write("Dry run: nothing was saved.")
        elif atomic and tally.rejected:
            self.stdout.write("--atomic: nothing was saved, because rows were rejected.")
        elif saved:
            self.stdout.write(self.style.SUCCESS("Done."))

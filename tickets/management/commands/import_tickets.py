"""`manage.py import_tickets <event_id> <file.csv>`: issue tickets from a CSV file.

Every row goes through `ticket_create`, the service behind `POST .../tickets`, so quotas,
holder validation, reference codes and `external_id` idempotency are the API's. The file is
read twice, streaming, never whole: first to check it is readable CSV with the needed columns
(nothing is written if not), then to import it.
"""

from __future__ import annotations

import codecs
import csv
import logging
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, transaction

from events.models import Event, TicketType
from ticketing.api.exceptions import ApplicationError
from tickets.exceptions import EventNotActive
from tickets.models import Ticket
from tickets.services.common import Actor
from tickets.services.issuing import ticket_create

# Rows per transaction without --atomic: few enough that a sale of the same ticket type waits at
# most a moment for the counter row, many enough that commits stop dominating.
CHUNK_ROWS = 100

REQUIRED_COLUMNS = ("firstname", "lastname", "email", "phone", "ticket_type")
OPTIONAL_COLUMNS = ("external_id", "reference_code")
# Checked here because a too-long value is a database error, not a validation message.
_MAX_LENGTHS = {
    name: Ticket._meta.get_field(name).max_length
    for name in ("firstname", "lastname", "email", "phone", "external_id", "reference_code")
}


class _Rollback(Exception):
    """Leaves the import's transaction without saving (dry run, or --atomic with rejections)."""


class RowRejected(Exception):
    pass


class _Undecodable(Exception):
    def __init__(self, line: int, error: UnicodeDecodeError):
        self.line, self.error = line, error


def _decoded_lines(binary, encoding: str) -> Iterator[str]:
    """The file's text, one line at a time, decoded as it is read.

    Decoding line by line (rather than through a text file, which decodes 8 KB blocks) is what
    lets a wrong encoding be reported with the line it is on.
    """
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    buffer = ""
    line = 0
    try:
        for line, raw in enumerate(binary, start=1):  # noqa: B007 (read in the handler)
            buffer += decoder.decode(raw)
            while (end := buffer.find("\n")) >= 0:
                yield buffer[: end + 1]
                buffer = buffer[end + 1 :]
        buffer += decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise _Undecodable(line, exc) from None
    if buffer:
        yield buffer


@dataclass
class Tally:
    rows: int = 0
    created: int = 0
    existing: int = 0
    rejected: int = 0


def _rows(lines: Iterator[str], delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number where the row starts, cells) for every non-blank row, header included."""
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CommandError(f"line {reader.line_num}: this is not valid CSV ({exc}).") from None
        if any(cell.strip() for cell in cells):
            yield line, cells
        line = reader.line_num + 1


class TicketTypes:
    """Resolve the `ticket_type` cell: an id of this event's ticket type, or its name."""

    def __init__(self, event: Event):
        self.by_id: dict[int, TicketType] = {}
        self.by_name: dict[str, list[TicketType]] = {}
        for ticket_type in TicketType.objects.filter(event=event):
            self.by_id[ticket_type.pk] = ticket_type
            self.by_name.setdefault(ticket_type.name.strip().casefold(), []).append(ticket_type)

    def resolve(self, value: str) -> int:
        value = value.strip()
        if not value:
            raise RowRejected("ticket_type is empty")
        if value.isdigit() and int(value) in self.by_id:
            return int(value)
        matches = self.by_name.get(value.casefold(), [])
        if len(matches) == 1:
            return matches[0].pk
        if matches:
            ids = ", ".join(str(t.pk) for t in matches)
            raise RowRejected(f"ticket type name '{value}' is ambiguous (ids {ids}); use the id")
        raise RowRejected(f"no ticket type '{value}' in this event")


class Progress:
    """A progress line on stderr: redrawn in place on a terminal, every 10% otherwise."""

    def __init__(self, stream, total: int, enabled: bool):
        self.stream, self.total, self.enabled = stream, max(total, 1), enabled
        self.tty = enabled and stream.isatty()
        self.shown = 0

    def _write(self, text: str) -> None:
        self.stream.write(text, ending="")
        self.stream.flush()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        percent = done * 100 // self.total
        if self.tty:
            if percent != self.shown or done == self.total:
                bar = "#" * (percent // 4)
                self._write(f"\r[{bar:<25}] {done}/{self.total} rows ({percent}%)")
        elif percent // 10 > self.shown // 10:
            self._write(f"{done}/{self.total} rows ({percent}%)\n")
        self.shown = percent

    def clear(self) -> None:
        if self.tty:
            self._write("\r" + " " * 60 + "\r")

    def finish(self) -> None:
        if self.tty:
            self._write("\n")


def _reason(exc: ApplicationError) -> str:
    fields = exc.extra.get("fields")
    if fields:
        return "; ".join(f"{name}: {errors[0]}" for name, errors in fields.items())
    return exc.message


class Command(BaseCommand):
    help = (
        "Issue tickets for an event from a CSV file with the columns firstname, lastname, email, "
        "phone, ticket_type (id or name) and optionally external_id and reference_code. Rows "
        "with an external_id already imported are skipped (idempotent). By default each good "
        "row is saved and rejected rows are reported by line; --atomic saves nothing unless "
        "every row is good."
    )

    def add_arguments(self, parser):
        parser.add_argument("event_id", type=int)
        parser.add_argument("csv_file", type=Path)
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
            "--encoding", default="utf-8-sig", help="File encoding (default UTF-8, BOM allowed)."
        )
        parser.add_argument("--delimiter", default=",", help="Cell separator (default ',').")

    def handle(self, *args, **options):
        event = Event.objects.filter(pk=options["event_id"]).first()
        if event is None:
            raise CommandError(f"Event {options['event_id']} does not exist.")
        path: Path = options["csv_file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file.")
        if len(options["delimiter"]) != 1:
            raise CommandError("--delimiter must be one character.")

        columns, width, total = self._scan(path, options)
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
                        self._import(event, path, columns, width, options, tally, progress)
                        if dry_run or tally.rejected:
                            raise _Rollback
                except _Rollback:
                    pass
            else:
                self._import(
                    event, path, columns, width, options, tally, progress, chunk=CHUNK_ROWS
                )
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

    # --- pass 1: is this a CSV we can read? ---------------------------------------------------

    @staticmethod
    def _rows(path: Path, options) -> Iterator[tuple[int, list[str]]]:
        with path.open("rb") as binary:
            yield from _rows(_decoded_lines(binary, options["encoding"]), options["delimiter"])

    def _scan(self, path: Path, options) -> tuple[dict[str, int], int, int]:
        """Column positions, header width and number of data rows; CommandError if unreadable."""
        columns: dict[str, int] | None = None
        width = 0
        rows = 0
        try:
            codecs.lookup(options["encoding"])
        except LookupError:
            raise CommandError(f"Unknown encoding {options['encoding']!r}.") from None
        try:
            for _line, cells in self._rows(path, options):
                if columns is None:
                    columns, width = self._header(cells), len(cells)
                else:
                    rows += 1
        except _Undecodable as exc:
            raise CommandError(
                f"{path}: line {exc.line} is not valid {options['encoding']} "
                f"({exc.error.reason}). Save the file as UTF-8 or pass --encoding."
            ) from None
        if columns is None:
            raise CommandError(f"{path}: the file is empty; the first line must name the columns.")
        return columns, width, rows

    def _header(self, cells: list[str]) -> dict[str, int]:
        names = [cell.strip().lower() for cell in cells]
        duplicates = sorted({n for n in names if n and names.count(n) > 1})
        if duplicates:
            raise CommandError(f"Columns named more than once: {', '.join(duplicates)}.")
        missing = [c for c in REQUIRED_COLUMNS if c not in names]
        if missing:
            raise CommandError(
                f"Missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}. "
                f"The first line must name the columns: {', '.join(REQUIRED_COLUMNS)} "
                f"(and optionally {', '.join(OPTIONAL_COLUMNS)}); found: {', '.join(names)}."
            )
        known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
        ignored = [n for n in names if n and n not in known]
        if ignored:
            self.stderr.write(f"Ignoring unknown columns: {', '.join(ignored)}.")
        return {name: i for i, name in enumerate(names) if name in known}

    # --- pass 2: import -----------------------------------------------------------------------

    def _import(self, event, path, columns, width, options, tally, progress, *, chunk=None):
        """Create the file's tickets, each row in its own savepoint so a rejection undoes it alone.

        Inside the caller's transaction (`--atomic`, `--dry-run`), or, with `chunk`, committing
        every `chunk` rows: a commit per row would wait for the disk ten thousand times.
        """
        types = TicketTypes(event)
        actor = Actor()  # an operator: no user, no application
        done = 0

        def import_rows(part) -> None:
            nonlocal done
            first_line = None
            for line, cells in part:
                first_line = first_line or line
                done += 1
                try:
                    values = self._values(cells, columns, width)
                    kwargs = dict(
                        event=event,
                        ticket_type_id=types.resolve(values["ticket_type"]),
                        firstname=values["firstname"],
                        lastname=values["lastname"],
                        email=values["email"],
                        phone=values["phone"],
                        external_id=values.get("external_id") or None,
                        reference_code=values.get("reference_code") or None,
                        suppress_notifications=not options["notify"],
                        actor=actor,
                        via_api=False,
                    )
                    with transaction.atomic():
                        result = ticket_create(**kwargs)
                except RowRejected as exc:
                    self._reject(tally, progress, line, str(exc))
                except EventNotActive as exc:
                    raise CommandError(f"{exc.message} No tickets can be issued.") from None
                except ApplicationError as exc:
                    self._reject(tally, progress, line, _reason(exc))
                except DatabaseError as exc:
                    kept = f" Rows before line {first_line} were saved." if chunk else ""
                    raise CommandError(
                        f"line {line}: database error ({exc.__class__.__name__}: {exc}).{kept}"
                    ) from exc
                else:
                    if result.idempotent:
                        tally.existing += 1
                    else:
                        tally.created += 1
                progress.update(done)

        with closing(self._rows(path, options)) as rows:
            next(rows)  # the header, checked by the scan
            if chunk is None:
                import_rows(rows)
                return
            for part in iter(lambda: list(islice(rows, chunk)), []):
                with transaction.atomic():
                    import_rows(part)

    def _values(self, cells: list[str], columns: dict[str, int], width: int) -> dict[str, str]:
        # A shifted row (an unquoted comma in a name) must not land in the wrong columns.
        if len(cells) != width:
            raise RowRejected(f"{len(cells)} cells where the header has {width}")
        values = {}
        for name, index in columns.items():
            value = cells[index].strip()
            if len(value) > _MAX_LENGTHS.get(name, sys.maxsize):
                raise RowRejected(f"{name}: longer than {_MAX_LENGTHS[name]} characters")
            values[name] = value
        return values

    def _reject(self, tally: Tally, progress: Progress, line: int, reason: str) -> None:
        tally.rejected += 1
        progress.clear()
        self.stdout.write(f"line {line}: {reason}")

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

"""Importing an uploaded CSV text (the admin's import): a preview that writes nothing, then the
import itself, both through `TicketImporter`, the row service of `import_tickets`.

The preview runs the real import inside a transaction that is rolled back, so it sees quotas,
taken codes and earlier imports exactly as the confirmed run will.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from itertools import islice

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.models import User
from events.models import Event

from .common import Actor
from .csv_input import CsvUnreadable, csv_header, csv_lines, csv_rows
from .importing import IMPORT_BATCH_ROWS, ImportRollback, RowOutcome, TicketImporter

# Outcomes kept for the page beyond the rejected ones, which are all kept.
REPORT_ROWS = 200


@dataclass
class ImportReport:
    outcomes: list[RowOutcome] = field(default_factory=list)
    created: int = 0
    existing: int = 0
    rejected: int = 0


def upload_decoded(data: bytes) -> str:
    """The upload's text (UTF-8, BOM allowed). Raises: CsvUnreadable (with the line)."""
    return "".join(csv_lines(io.BytesIO(data), "utf-8-sig"))


def tickets_import_text(
    *, event: Event, text: str, user: User, notify: bool, dry_run: bool
) -> ImportReport:
    """Import `text` (comma-separated, with a header) into `event`, a batch per transaction;
    with `dry_run`, everything is rolled back and the report says what would happen.

    Raises: CsvUnreadable, EventNotActive.
    Locks: the ticket types' rows, one batch at a time (none in a preview).
    """
    rows = csv_rows(io.StringIO(text, newline=""), ",")
    first = next(rows, None)
    if first is None:
        raise CsvUnreadable(_("The file is empty; the first line must name the columns."))
    importer = TicketImporter(
        event=event,
        header=csv_header(first[1]),
        actor=Actor(user=user),
        notify=notify,
        preview=dry_run,
    )
    report = ImportReport()

    def import_all() -> None:
        for batch in iter(lambda: list(islice(rows, IMPORT_BATCH_ROWS)), []):
            with transaction.atomic():
                for outcome in importer.import_batch(batch):
                    setattr(report, outcome.status, getattr(report, outcome.status) + 1)
                    if outcome.status == "rejected" or len(report.outcomes) < REPORT_ROWS:
                        report.outcomes.append(outcome)

    if not dry_run:
        import_all()
        return report
    try:
        with transaction.atomic():
            import_all()
            raise ImportRollback
    except ImportRollback:
        pass
    return report

"""Importing an uploaded file, CSV or XLSX (the admin's import): a preview that writes nothing,
then the import itself, both through `TicketImporter`, the row service of `import_tickets`.

The preview runs the import's checks (in a transaction that is rolled back, should a race send
a batch down the row-by-row path), so it sees quotas, taken codes and earlier imports as the
confirmed run will. Between the two, the file stays on the server (`ImportUpload`), named by a
signed id that only its uploader can confirm, for its event and within the hour: a file of a
few MB is sent once, not posted back with the confirmation.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import islice

from django.core import signing
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import User
from events.models import Event

from ..models import ImportUpload
from .common import Actor
from .csv_input import FileUnreadable, csv_header
from .import_files import file_rows
from .importing import IMPORT_BATCH_ROWS, ImportRollback, RowOutcome, TicketImporter

# Outcomes kept for the page beyond the rejected ones, which are all kept.
REPORT_ROWS = 200
# A preview can be confirmed for this long; its upload is deleted a day after it was made (by
# the next upload, whoever makes it), or once imported.
CONFIRM_WITHIN_SECONDS = 60 * 60
KEEP_UPLOADS = timedelta(days=1)
SIGNING_SALT = "tickets.import_upload"


class UploadGone(Exception):
    """The confirmation names no upload its user may import: the id is forged, expired, of
    another user or event, or its upload was imported already."""

    def __init__(self):
        self.message = _("This preview has expired or is not yours: upload the file again.")
        super().__init__(self.message)


@dataclass(frozen=True)
class KeptUpload:
    data: bytes
    notify: bool
    file_format: str  # "csv" or "xlsx" (`import_files.import_format`)


@dataclass
class ImportReport:
    outcomes: list[RowOutcome] = field(default_factory=list)
    created: int = 0
    existing: int = 0
    rejected: int = 0


def _rows(data: bytes, file_format: str) -> Iterator[tuple[int, list[str]]]:
    """The upload's rows: comma-separated UTF-8 (BOM allowed), or a workbook's first sheet."""
    return file_rows(io.BytesIO(data), file_format)


def upload_rows(data: bytes, file_format: str) -> int:
    """How many data rows the upload holds (the header not counted), read through once: a
    file that cannot be read is refused here, before it is kept. Raises: FileUnreadable."""
    return max(sum(1 for _ in _rows(data, file_format)) - 1, 0)


def tickets_import_file(
    *,
    event: Event,
    data: bytes,
    file_format: str,
    user: User,
    notify: bool,
    dry_run: bool,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import the file `data` (CSV or XLSX, with a header) into `event`, a batch per
    transaction; with `dry_run`, everything is rolled back and the report says what would
    happen. `progress` is told the rows done after each batch.

    Raises: FileUnreadable, EventNotActive.
    Locks: the ticket types' rows, one batch at a time (none in a preview).
    """
    rows = _rows(data, file_format)
    first = next(rows, None)
    if first is None:
        raise FileUnreadable(_("The file is empty; the first line must name the columns."))
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
            if progress is not None:
                progress(report.created + report.existing + report.rejected)

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


def import_upload_keep(
    *, event: Event, user: User, data: bytes, file_format: str, notify: bool, rows: int = 0
) -> str:
    """Keep an upload for its confirmation; returns the signed id naming it, which only `user`
    can confirm, for `event`. Uploads over a day old, anyone's, are deleted on the way."""
    ImportUpload.objects.filter(created_at__lt=timezone.now() - KEEP_UPLOADS).delete()
    upload = ImportUpload.objects.create(event=event, uploaded_by=user, data=data)
    claim = {"upload": upload.pk, "user": user.pk, "event": event.pk, "notify": notify}
    claim |= {"rows": rows, "format": file_format}
    return signing.dumps(claim, salt=SIGNING_SALT)


def import_upload_claim(*, signed_id: str, event: Event, user: User) -> dict:
    """What the signed id says (`upload`, `notify`, `rows`, `format`), if `user` may import it
    into `event`. Raises: UploadGone."""
    try:
        claim = signing.loads(signed_id, salt=SIGNING_SALT, max_age=CONFIRM_WITHIN_SECONDS)
    except signing.BadSignature:  # SignatureExpired too
        raise UploadGone from None
    if claim["user"] != user.pk or claim["event"] != event.pk:
        raise UploadGone
    return claim


def _kept(claim: dict, data: bytes) -> KeptUpload:
    # An id signed before workbooks were taken names a CSV file.
    return KeptUpload(bytes(data), claim["notify"], claim.get("format", "csv"))


def import_upload_read(*, signed_id: str, event: Event, user: User) -> KeptUpload:
    """The file kept for a preview, and how to import it; it stays. Raises: UploadGone."""
    claim = import_upload_claim(signed_id=signed_id, event=event, user=user)
    data = (
        ImportUpload.objects.filter(pk=claim["upload"], uploaded_by=user, event=event)
        .values_list("data", flat=True)
        .first()
    )
    if data is None:
        raise UploadGone
    return _kept(claim, data)


@transaction.atomic
def import_upload_take(*, signed_id: str, event: Event, user: User) -> KeptUpload:
    """The file a preview kept, and how to import it, removed so that it is imported once.

    Raises: UploadGone.
    Locks: the upload's row until commit: a second click waits, then finds it gone.
    """
    claim = import_upload_claim(signed_id=signed_id, event=event, user=user)
    upload = (
        ImportUpload.objects.select_for_update()
        .filter(pk=claim["upload"], uploaded_by=user, event=event)
        .first()
    )
    if upload is None:
        raise UploadGone
    upload.delete()
    return _kept(claim, upload.data)

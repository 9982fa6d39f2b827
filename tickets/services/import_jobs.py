"""The admin's import of a large file as a task: its preview, then its import, each run by a
worker while the page shows a progress bar, so that neither is bound by a request's timeout.

The file is the upload the preview kept (`import_upload`), named by its signed id; a job is
named by a signed id of its own, bound to its user and event as the upload's is. The rows done
are kept in the cache (Redis, which the web and worker processes share; without it, a file
cache on this machine, since the in-memory cache of a development setup is each process's
own). What the job found (the report) is the task's result, kept by the task framework: the
page reads it there, so the outcome is shown even if the cache lost the progress.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.core import signing
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.filebased import FileBasedCache
from django.core.cache.backends.locmem import LocMemCache
from django.utils.translation import gettext as _
from django_tasks import TaskResultStatus, task

from accounts.models import User
from events.models import Event
from ticketing.api.exceptions import ApplicationError

from .csv_input import FileUnreadable
from .import_upload import (
    CONFIRM_WITHIN_SECONDS,
    ImportReport,
    UploadGone,
    import_upload_read,
    import_upload_take,
    tickets_import_file,
)

# Files with more data rows than this are previewed and imported by a worker.
INLINE_ROWS = 5000
# Rejected lines a job's report keeps for the page (all are counted).
REPORT_REJECTED = 1000
JOB_SALT = "tickets.import_job"
_LOCAL_STORE = FileBasedCache(
    str(Path(tempfile.gettempdir()) / "ticketing-import-progress"), {"MAX_ENTRIES": 1000}
)


def _store() -> BaseCache:
    cache = caches["default"]
    return _LOCAL_STORE if isinstance(cache, LocMemCache) else cache


def _progress_key(job: str) -> str:
    return f"tickets:import-job:{job}"


@dataclass
class JobStatus:
    state: str  # "waiting" (for a worker), "running", "done" or "failed"
    done: int
    total: int
    confirm: bool  # the import itself, not its preview
    upload: str  # the upload's signed id
    report: dict | None = None  # when done: counts and outcomes (`report_as_dict`)


def import_job_start(*, event: Event, user: User, upload: str, rows: int, confirm: bool) -> str:
    """Queue the preview of the kept upload named `upload` (or, with `confirm`, its import);
    returns the job's signed id, which only `user` can follow, for `event`."""
    job = uuid.uuid4().hex
    _store().set(_progress_key(job), 0, CONFIRM_WITHIN_SECONDS)
    result = import_job_run.enqueue(
        job=job, event_id=event.pk, user_id=user.pk, upload=upload, confirm=confirm
    )
    claim = {"job": job, "task": str(result.id), "user": user.pk, "event": event.pk}
    claim |= {"upload": upload, "rows": rows, "confirm": confirm}
    return signing.dumps(claim, salt=JOB_SALT)


def import_job_status(*, job_id: str, event: Event, user: User) -> JobStatus:
    """Where the job is. Raises: UploadGone (a forged or expired id, or not `user`'s)."""
    try:
        claim = signing.loads(job_id, salt=JOB_SALT, max_age=CONFIRM_WITHIN_SECONDS)
    except signing.BadSignature:
        raise UploadGone from None
    if claim["user"] != user.pk or claim["event"] != event.pk:
        raise UploadGone
    result = import_job_run.get_result(claim["task"])
    status = JobStatus(
        state="waiting",
        done=0,
        total=claim["rows"],
        confirm=claim["confirm"],
        upload=claim["upload"],
    )
    if result.status == TaskResultStatus.SUCCESSFUL:
        status.state, status.done, status.report = "done", status.total, result.return_value
    elif result.status == TaskResultStatus.FAILED:
        status.state = "failed"
    else:
        status.done = _store().get(_progress_key(claim["job"])) or 0
        if result.status == TaskResultStatus.RUNNING:
            status.state = "running"
    return status


def report_as_dict(report: ImportReport) -> dict:
    """The report as the page shows it (and as a task's result is stored: JSON)."""
    outcomes, rejected = [], 0
    for outcome in report.outcomes:
        if outcome.status == "rejected":
            rejected += 1
            if rejected > REPORT_REJECTED:
                continue
        values = {k: outcome.values.get(k, "") for k in ("firstname", "lastname", "email")}
        values["ticket_type"] = outcome.values.get("ticket_type", "")
        outcomes.append(
            {"line": outcome.line, "status": outcome.status, "reason": outcome.reason}
            | {"values": values}
        )
    counts = {"created": report.created, "existing": report.existing}
    return counts | {"rejected": report.rejected, "outcomes": outcomes, "error": ""}


@task(queue_name="default")
def import_job_run(*, job: str, event_id: int, user_id: int, upload: str, confirm: bool) -> dict:
    """Preview (or, `confirm`, import) the kept upload, telling the cache the rows done after
    each batch; returns the report (`report_as_dict`), or one whose `error` says why not."""
    event = Event.objects.get(pk=event_id)
    user = User.objects.get(pk=user_id)
    store, key = _store(), _progress_key(job)
    take = import_upload_take if confirm else import_upload_read
    try:
        kept = take(signed_id=upload, event=event, user=user)
        report = tickets_import_file(
            event=event,
            data=kept.data,
            file_format=kept.file_format,
            user=user,
            notify=kept.notify,
            dry_run=not confirm,
            progress=lambda done: store.set(key, done, CONFIRM_WITHIN_SECONDS),
        )
    except (UploadGone, FileUnreadable, ApplicationError) as exc:
        return {"error": exc.message or _("The import failed.")}
    return report_as_dict(report)

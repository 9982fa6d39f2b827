"""A real-size admin import: 50,000 rows previewed, then imported, by a real worker process
(`manage.py run_worker`), the page's progress bar moving as the test watches it. Prints the
time and the worker's peak memory."""

import re
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.admin.helpers import messages_of
from tests.factories import (
    EventFactory,
    MembershipFactory,
    OrganizerFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.webhooks.helpers import shared_database, wait_for, workers  # noqa: F401
from tickets.models import ImportUpload, Ticket

ROWS = 50_000
# How long the test waits for a job before it fails: a hung job, not a speed target (the speed
# was measured by bench/import_tickets.py, in git history; tests/operators/test_import_batches.py
# pins the queries per batch). The time is printed.
WAIT_SECONDS = 900
# A bound that a regression (the file or its tickets held whole) would pass by far.
MAX_PEAK_MIB = 400
_BAR = re.compile(r'<progress id="import-progress" value="(\d+)" max="(\d+)"')


def _csv() -> bytes:
    return (
        "firstname,lastname,email,phone,ticket_type,external_id\n"
        + "".join(
            f"สมชาย{i},ใจดี{i},somchai{i}@example.co.th,08{i:08d},Hall,crm-{i:06d}\n"
            for i in range(ROWS)
        )
    ).encode()


def _watch(client: Client, url: str, seen: list[int], timeout: float):
    """Reload the job page (as its refresh does) until it shows no progress bar; the bar's
    values on the way go to `seen`. Returns the last response."""

    def finished():
        page = client.get(url)
        bar = _BAR.search(page.content.decode()) if page.status_code == 200 else None
        if bar is None:
            return page
        assert int(bar[2]) == ROWS
        seen.append(int(bar[1]))
        return None

    return wait_for(finished, timeout=timeout, what="the import job to finish")


def _peak_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024


def _moving(seen: list[int]) -> list[int]:
    assert seen == sorted(seen), seen  # never backwards
    return sorted({n for n in seen if 0 < n < ROWS})


@pytest.mark.django_db(transaction=True)
def test_a_50000_row_import_runs_as_a_task_with_progress_in_bounded_memory(
    workers,  # noqa: F811
):
    organizer = OrganizerFactory()
    event = EventFactory(organizer=organizer)
    hall = TicketTypeFactory(event=event, name="Hall", quantity=ROWS)
    user = UserFactory(username="importer", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role="admin")
    client = Client()
    client.force_login(user)
    url = reverse("admin:tickets_ticket_import") + f"?event_id={event.pk}"
    data = _csv()
    worker = workers.start()
    started = time.monotonic()

    upload = SimpleUploadedFile("attendees.csv", data, content_type="text/csv")
    queued = client.post(url, {"file": upload, "preview": "1"})
    assert queued.status_code == 302 and "job=" in queued["Location"]
    preview_seen: list[int] = []
    preview = _watch(client, queued["Location"], preview_seen, WAIT_SECONDS)
    preview_seconds = time.monotonic() - started
    html = preview.content.decode()
    assert f"{ROWS} tickets would be created, 0 were already imported, 0 lines are" in html
    assert "สมชาย0" in html and not Ticket.objects.filter(event=event).exists()
    token = re.search(r'name="upload" value="([^"]+)"', html)[1]

    confirmed = client.post(url, {"confirm": "1", "upload": token})
    assert confirmed.status_code == 302 and "job=" in confirmed["Location"]
    import_seen: list[int] = []
    done = _watch(client, confirmed["Location"], import_seen, WAIT_SECONDS)
    seconds = time.monotonic() - started
    peak = _peak_mib(worker.pid)

    assert done.status_code == 302
    assert messages_of(client.get(done["Location"])) == [
        f"Imported {ROWS} tickets (0 already imported, 0 rejected)."
    ]
    assert Ticket.objects.filter(event=event).count() == ROWS
    hall.refresh_from_db()
    assert hall.sold_count == ROWS
    assert Ticket.objects.get(external_id="crm-049999").firstname == "สมชาย49999"
    assert not ImportUpload.objects.exists()
    # Progress was seen moving in both runs: several values between none and all rows.
    assert len(_moving(preview_seen)) >= 3 and len(_moving(import_seen)) >= 3
    print(
        f"\n{ROWS:,} rows ({len(data) / 2**20:.1f} MiB): preview {preview_seconds:.1f} s, "
        f"preview and import {seconds:.1f} s; worker peak RSS {peak:.0f} MiB; progress seen "
        f"{len(_moving(preview_seen))} + {len(_moving(import_seen))} times"
    )
    assert peak < MAX_PEAK_MIB

"""Two uploads sharing some scans (CONTRACT §11): the one whose chunk commits second replays
the shared scans with the first one's results and still applies its own."""

import pytest
from django.db import transaction
from django.test import override_settings

from checkin.models import CheckInLog, ScanRecord
from tests.factories import TicketFactory
from tickets.models import Ticket

from .concurrency import in_thread, wait_until_waiting_on_locks
from .helpers import batch_url, event_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

AT = "2026-01-10T19:30:00+07:00"


@override_settings(BATCH_UPLOADS_PER_SERVER=2)  # both uploads run at once
def test_batch_overlapping_upload_replays_the_shared_scan_and_applies_its_own(
    client, event, ticket_type
):
    own = TicketFactory(event=event, ticket_type=ticket_type)
    shared = TicketFactory(event=event, ticket_type=ticket_type)  # locked after `own`: higher id
    shared_scan = {"id": "shared-scan-1", "ticket_id": shared.id, "used_at": AT}
    own_scan = {"id": "own-scan-001", "ticket_id": own.id, "used_at": AT}

    assert client.get(event_url(event)).status_code == 200  # the app loaded before the threads
    with transaction.atomic():
        # The second upload has read which scans are recorded (none), then waits on `own`.
        list(Ticket.objects.select_for_update().filter(pk=own.pk))
        second, second_out = in_thread(
            lambda: client.post(batch_url(event), {"scans": [own_scan, shared_scan]}, format="json")
        )
        wait_until_waiting_on_locks(1, [second])
        first, first_out = in_thread(
            lambda: client.post(batch_url(event), {"scans": [shared_scan]}, format="json")
        )
        first.join(timeout=60)
    second.join(timeout=60)

    first_result = first_out[0].json()["results"][0]
    assert (first_result["success"], first_result["replayed"]) == (True, False)
    results = second_out[0].json()["results"]
    assert [(r["id"], r["success"], r["error"], r["replayed"]) for r in results] == [
        ("own-scan-001", True, None, False),
        ("shared-scan-1", True, None, True),
    ]
    assert results[1] == {**first_result, "replayed": True}
    assert sorted(ScanRecord.objects.values_list("scan_id", "success")) == [
        ("own-scan-001", True),
        ("shared-scan-1", True),
    ]
    # The second upload's rejection of the shared scan was rolled back with its first try.
    assert sorted(CheckInLog.objects.values_list("scan_id", "error")) == [
        ("own-scan-001", None),
        ("shared-scan-1", None),
    ]

"""Six scanners upload the same 500 scans at once: each scan is applied once (CONTRACT §11)."""

import json
from collections import Counter

import pytest
from django.db import connection
from django.test import override_settings

from checkin.models import CheckInLog, ScanRecord
from events.models import TicketType
from tests.factories import OrderFactory
from tests.write_api.test_races import run_at_once
from tickets.models import Ticket

from .helpers import batch_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


# Six at once, within the API limit: the race is what is tested, not the limits (CONTRACT §9).
@override_settings(
    BATCH_UPLOADS_PER_ORGANIZER=6, BATCH_UPLOADS_PER_SERVER=6, API_RATE_LIMIT="100000/m"
)
def test_batch_six_racing_uploads_of_500_scans_apply_each_once(client, event, ticket_type):
    order = OrderFactory(event=event)
    Ticket.objects.bulk_create(
        Ticket(
            event=event,
            order=order,
            ticket_type=ticket_type,
            reference_code=f"RACE{i:05d}",
            page_token=f"race-token-{i}",
        )
        for i in range(500)
    )
    TicketType.objects.filter(pk=ticket_type.pk).update(sold_count=500)
    codes = [f"RACE{i:05d}" for i in range(500)]
    body = json.dumps(
        {
            "scans": [
                {"id": f"race-{i:05d}", "reference_code": code, "used_at": "2026-01-10T12:00:00Z"}
                for i, code in enumerate(codes)
            ]
        }
    )

    def post(i):
        try:
            return client.post(batch_url(event), body, content_type="application/json")
        finally:
            connection.close()

    responses = run_at_once(6, post)

    assert [status for status, _ in responses] == [200] * 6
    first_results = Counter()
    for _, response in responses:
        assert [r["id"] for r in response["results"]] == [f"race-{i:05d}" for i in range(500)]
        for result in response["results"]:
            assert (result["success"], result["error"]) == (True, None), result
            if not result["replayed"]:
                first_results[result["id"]] += 1
    assert set(first_results.values()) == {1} and len(first_results) == 500
    assert Ticket.objects.filter(event=event, status="used").count() == 500
    assert CheckInLog.objects.filter(error__isnull=True).count() == 500
    assert CheckInLog.objects.filter(error__isnull=False).count() == 0  # losers rolled back
    assert ScanRecord.objects.filter(event=event).count() == 500

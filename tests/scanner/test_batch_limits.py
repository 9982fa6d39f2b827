"""A batch upload's limits (CONTRACT §9): each scan counts against the caller's API rate limit,
and an organizer's uploads run at most BATCH_UPLOADS_PER_ORGANIZER at a time. A refused upload
is a 429 `rate_limited` with Retry-After, and applies nothing."""

import pytest
from django.db import transaction
from django.test import override_settings

from checkin.models import CheckInLog, ScanRecord
from tests.factories import TicketFactory
from tests.oauth.flow import stored_token
from tests.oauth.support import free_port, wait_for_fresh_window
from ticketing.api.throttling import token_rate_key
from ticketing.settings.caches import redis_caches
from tickets.models import Ticket

from .concurrency import in_thread, wait_until_waiting_on_locks
from .helpers import batch_url, event_url

AT = "2026-01-10T19:30:00+07:00"


def _scans(prefix: str, tickets) -> dict:
    return {
        "scans": [{"id": f"{prefix}-{t.id:06d}", "ticket_id": t.id, "used_at": AT} for t in tickets]
    }


def _assert_refused(response) -> None:
    assert response.status_code == 429, response.json()
    assert (response.json()["success"], response.json()["error"]) == (False, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60


@pytest.mark.django_db
@override_settings(API_RATE_LIMIT="10/m")
def test_batch_scans_are_counted_against_the_rate_limit(client, event, ticket_type):
    wait_for_fresh_window(token_rate_key(stored_token(client.token)), margin=10)
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(11)]

    spent = client.post(batch_url(event), _scans("first", tickets[:6]), format="json")
    # 6 of 10 spent: 5 more scans would pass the limit (the refused request still costs one).
    refused = client.post(batch_url(event), _scans("second", tickets[6:]), format="json")

    assert spent.status_code == 200, spent.json()
    _assert_refused(refused)
    assert not ScanRecord.objects.filter(scan_id__startswith="second").exists()
    assert not CheckInLog.objects.filter(ticket__in=tickets[6:]).exists()
    assert set(
        Ticket.objects.filter(pk__in=[t.pk for t in tickets[6:]]).values_list("status", flat=True)
    ) == {"active"}
    # 7 spent: three more requests, then the limit.
    statuses = [client.get(event_url(event)).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]


@pytest.mark.django_db
@override_settings(API_RATE_LIMIT="5/m")
def test_batch_within_the_remaining_budget_is_applied(client, event, ticket_type):
    wait_for_fresh_window(token_rate_key(stored_token(client.token)), margin=10)
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(5)]

    response = client.post(batch_url(event), _scans("whole", tickets), format="json")

    assert response.status_code == 200, response.json()
    assert [r["success"] for r in response.json()["results"]] == [True] * 5
    assert client.get(event_url(event)).status_code == 429


@pytest.mark.django_db
def test_batch_limits_fail_open_when_the_cache_does_not_answer(
    client, event, ticket_type, settings, caplog
):
    settings.CACHES = redis_caches(
        f"redis://127.0.0.1:{free_port()}/0", key_prefix="down", timeout_ms=150, breaker_seconds=5
    )
    settings.API_RATE_LIMIT = "2/m"
    settings.BATCH_UPLOADS_PER_ORGANIZER = 1
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(5)]

    response = client.post(batch_url(event), _scans("open", tickets), format="json")

    assert response.status_code == 200, response.json()
    assert [r["success"] for r in response.json()["results"]] == [True] * 5
    warnings = {r.getMessage().split(":")[0] for r in caplog.records if r.levelname == "WARNING"}
    assert {"concurrency not limited", "rate limits not charged"} <= warnings


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@override_settings(BATCH_UPLOADS_PER_ORGANIZER=2, BATCH_UPLOADS_PER_SERVER=3)
def test_batch_third_concurrent_upload_of_an_organizer_is_refused(client, event, ticket_type):
    first, second, third = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(3))

    def upload(prefix, ticket):
        return lambda: client.post(batch_url(event), _scans(prefix, [ticket]), format="json")

    assert client.get(event_url(event)).status_code == 200  # the app loaded before the threads
    with transaction.atomic():
        # The two uploads take their slots, then wait on these rows.
        list(Ticket.objects.select_for_update().filter(pk__in=[first.pk, second.pk]))
        threads = [in_thread(upload("one", first)), in_thread(upload("two", second))]
        wait_until_waiting_on_locks(2, [thread for thread, _ in threads])
        refused_thread, refused = in_thread(upload("three", third))
        refused_thread.join(timeout=30)
    for thread, _ in threads:
        thread.join(timeout=60)

    _assert_refused(refused[0])
    assert [out[0].status_code for _, out in threads] == [200, 200]
    assert sorted(ScanRecord.objects.values_list("scan_id", flat=True)) == [
        f"one-{first.id:06d}",
        f"two-{second.id:06d}",
    ]
    assert Ticket.objects.get(pk=third.pk).status == "active"
    # The slots were given back.
    again = client.post(batch_url(event), _scans("four", [third]), format="json")
    assert again.status_code == 200, again.json()

"""A server's cap on batch uploads across organizers (BATCH_UPLOADS_PER_SERVER, issue 28): with
its slots taken, another organizer's upload is refused (429 `rate_limited` with Retry-After,
nothing applied) though its own organizer's cap has room, so uploads never hold every worker."""

import pytest
from django.db import transaction
from django.test import override_settings

from checkin.models import CheckInLog, ScanRecord
from tests.factories import EventFactory, MembershipFactory, TicketFactory, TicketTypeFactory
from tests.support import TokenClient, mint_token
from tickets.models import Ticket

from .concurrency import in_thread, wait_until_waiting_on_locks
from .helpers import batch_url, event_url

AT = "2026-01-10T19:30:00+07:00"


def _scans(prefix: str, tickets) -> dict:
    return {
        "scans": [{"id": f"{prefix}-{t.id:06d}", "ticket_id": t.id, "used_at": AT} for t in tickets]
    }


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@override_settings(BATCH_UPLOADS_PER_ORGANIZER=2, BATCH_UPLOADS_PER_SERVER=1)
def test_batch_upload_beyond_the_server_cap_is_refused_whoever_sends_it(
    client, event, ticket_type, other_organizer, other_application, member
):
    other_event = EventFactory(organizer=other_organizer, title="Loy Krathong")
    other_type = TicketTypeFactory(event=other_event, name="Lantern", price=0, quantity=10)
    MembershipFactory(user=member, organizer=other_organizer, role="admin")
    other = TokenClient(
        mint_token(application=other_application, user=member, scope="public organizer")
    )
    held = TicketFactory(event=event, ticket_type=ticket_type)
    mine, theirs = (TicketFactory(event=other_event, ticket_type=other_type) for _ in range(2))

    assert client.get(event_url(event)).status_code == 200  # the app loaded before the threads
    with transaction.atomic():
        # Organizer A's upload takes the server's only slot, then waits on this row.
        list(Ticket.objects.select_for_update().filter(pk=held.pk))
        running, out = in_thread(
            lambda: client.post(batch_url(event), _scans("a", [held]), format="json")
        )
        wait_until_waiting_on_locks(1, [running])
        refused_thread, refused = in_thread(
            lambda: other.post(batch_url(other_event), _scans("b", [mine]), format="json")
        )
        refused_thread.join(timeout=30)
        assert running.is_alive()
    running.join(timeout=60)
    refused = refused[0]

    assert refused.status_code == 429, refused.json()
    assert (refused.json()["success"], refused.json()["error"]) == (False, "rate_limited")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert out[0].status_code == 200, out[0].json()
    assert list(ScanRecord.objects.values_list("scan_id", flat=True)) == [f"a-{held.id:06d}"]
    assert not CheckInLog.objects.filter(ticket=mine).exists()
    assert Ticket.objects.get(pk=mine.pk).status == "active"
    # Both slots were given back: B's organizer slot and the server's.
    again = other.post(batch_url(other_event), _scans("b", [mine, theirs]), format="json")
    assert again.status_code == 200, again.json()
    assert [r["success"] for r in again.json()["results"]] == [True, True]

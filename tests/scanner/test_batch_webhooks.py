"""An upload's scans record the gate's webhook events (CONTRACT §13): one per admission or
renewal, with the API's Ticket as that scan left it; none for a rejected scan."""

import pytest
from django.test import override_settings

from tests.factories import TicketFactory
from tickets.models import Ticket
from tickets.selectors import ticket_for_output
from tickets.serializers import TicketSerializer
from webhooks.models import WebhookEvent
from webhooks.services import webhook_endpoint_create

from .helpers import batch_url

pytestmark = pytest.mark.django_db

AT = "2026-01-10T19:30:00+07:00"
LATER = "2026-01-10T19:45:00+07:00"


@override_settings(WEBHOOK_ALLOW_PRIVATE_URLS=True)
def test_batch_records_a_webhook_event_per_change_with_the_ticket_as_the_scan_left_it(
    client, event, ticket_type
):
    webhook_endpoint_create(
        organizer_id=event.organizer_id, url="http://127.0.0.1:9/in", event_types=["*"]
    )
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    revoked = TicketFactory(event=event, ticket_type=ticket_type, status=Ticket.Status.REVOKED)

    response = client.post(
        batch_url(event),
        {
            "scans": [
                {"id": "hook-scan-1", "ticket_id": ticket.id, "used_at": AT},
                {"id": "hook-scan-2", "ticket_id": revoked.id, "used_at": AT},
                {"id": "hook-scan-3", "ticket_id": ticket.id, "used_at": AT},  # already used
                {"id": "hook-scan-4", "ticket_id": ticket.id, "used_at": LATER, "action": "renew"},
            ]
        },
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert [r["error"] for r in response.json()["results"]] == [
        None,
        "ticket_revoked",
        "ticket_already_used",
        None,
    ]
    payloads = [e.payload for e in WebhookEvent.objects.order_by("created_at", "id")]
    now = TicketSerializer().to_representation(ticket_for_output(pk=ticket.id))
    assert [(p["type"], p["event_id"]) for p in payloads] == [
        ("ticket.checked_in", event.id),
        ("ticket.renewed", event.id),
    ]
    checked_in = payloads[0]["data"]["ticket"]
    assert checked_in == {
        **now,
        "status": "used",
        "used_at": AT,
        "updated_at": checked_in["updated_at"],
    }
    assert payloads[1]["data"] == {"ticket": now}
    assert now["status"] == "active"

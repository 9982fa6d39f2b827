"""`ticket_url` on the API's Ticket object (CONTRACT §14): in every answer, the webhook payloads
(the same representation) and the OpenAPI document."""

import json

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from tests.factories import WebhookEndpointFactory
from tickets.serializers import TicketSerializer
from tickets.services.pages import ticket_page_token_regenerate
from tickets.services.publishing import Type, ticket_event_record
from webhooks.models import WebhookEvent

from .helpers import ticket_songkran

pytestmark = pytest.mark.django_db


def test_event_tickets_carry_the_page_url(app_client, organizer):
    ticket = ticket_songkran(organizer)
    url = f"/api/public/organizers/{organizer.id}/events/{ticket.event_id}/tickets"

    [listed] = app_client.get(url).json()["tickets"]

    assert listed["ticket_url"] == f"{settings.SITE_URL}/t/{ticket.page_token}"
    page = APIClient().get(listed["ticket_url"].removeprefix(settings.SITE_URL))
    assert page.status_code == 200


@override_settings(SITE_URL="https://tickets.example.com")
def test_ticket_url_follows_site_url_not_the_request(app_client, organizer):
    ticket = ticket_songkran(organizer)
    url = f"/api/public/organizers/{organizer.id}/events/{ticket.event_id}/tickets"

    [listed] = app_client.get(url, HTTP_HOST="127.0.0.1").json()["tickets"]

    assert listed["ticket_url"] == f"https://tickets.example.com/t/{ticket.page_token}"


def test_regenerating_changes_the_ticket_url(organizer):
    ticket = ticket_songkran(organizer)
    before = TicketSerializer().to_representation(ticket)["ticket_url"]
    ticket_page_token_regenerate(ticket=ticket)
    ticket.refresh_from_db()
    after = TicketSerializer().to_representation(ticket)["ticket_url"]
    assert before != after == f"{settings.SITE_URL}/t/{ticket.page_token}"


def test_openapi_declares_ticket_url():
    response = APIClient().get("/api/public/schema/", HTTP_ACCEPT="application/json")
    ticket = json.loads(response.content)["components"]["schemas"]["Ticket"]

    assert ticket["properties"]["ticket_url"]["type"] == "string"
    assert ticket["properties"]["ticket_url"]["format"] == "uri"
    assert ticket["properties"]["ticket_url"]["readOnly"] is True
    assert "ticket_url" in ticket["required"]


def test_webhook_payloads_carry_the_ticket_url(organizer):
    ticket = ticket_songkran(organizer)
    WebhookEndpointFactory(organizer=organizer)
    with transaction.atomic():
        ticket_event_record(organizer_id=organizer.id, ticket=ticket, type=Type.TICKET_REVOKED)

    payload = WebhookEvent.objects.get(type=Type.TICKET_REVOKED).payload
    assert payload["data"]["ticket"]["ticket_url"] == (f"{settings.SITE_URL}/t/{ticket.page_token}")

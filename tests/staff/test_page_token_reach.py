"""The staff check-in page's tokens act only on the check-in routes (CONTRACT §15), whatever the
user's role, and the page hands them out at a bounded rate per user."""

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from tests.factories import MembershipFactory, TicketFactory, UserFactory
from tests.oauth.support import wait_for_fresh_window
from tests.support import TokenClient
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

AT = "2026-01-10T19:30:00+07:00"


@pytest.fixture(params=["owner", "admin", "staff"])
def page(request, organizer, event, ticket_type):
    """(API client with the page's token of a member of `organizer` in role `param`, event,
    ticket)."""
    user = UserFactory(username=f"gate-{request.param}")
    MembershipFactory(user=user, organizer=organizer, role=request.param)
    browser = Client()
    browser.force_login(user)
    token = browser.post(reverse("checkin_page:token")).json()["access_token"]
    ticket = TicketFactory(event=event, ticket_type=ticket_type, reference_code="GATE0001")
    return TokenClient(token), event, ticket


def _event(event) -> str:
    return f"/api/public/organizers/{event.organizer_id}/events/{event.pk}"


def _refused_calls(event, ticket):
    organizer = f"/api/public/organizers/{event.organizer_id}"
    return [
        ("get", f"{organizer}/webhooks", None, "organizer"),
        ("post", f"{organizer}/webhooks", {"url": "https://example.com/hook"}, "organizer"),
        (
            "post",
            f"{_event(event)}/tickets",
            {"ticket_type_id": ticket.ticket_type_id},
            "organizer",
        ),
        ("get", f"{organizer}/events", None, "organizer"),
        ("get", _event(event), None, "organizer"),
        ("get", f"{_event(event)}/tickets", None, "organizer"),
        ("post", f"{_event(event)}/tickets/{ticket.pk}/checkin", {}, "organizer"),
        ("post", f"{_event(event)}/tickets/invalidate", {"ticket_id": ticket.pk}, "organizer"),
        ("get", f"{organizer}/tickets", None, "public"),
        ("get", "/api/public/organizers", None, "public"),
        ("get", "/api/public/me", None, "public"),
        (
            "get",
            f"/api/public/tickets/search?event_id={event.pk}&reference_code=GATE0001",
            None,
            "public",
        ),
    ]


def test_page_token_is_refused_beyond_the_check_in_routes(page):
    api, event, ticket = page
    for method, url, body, scope in _refused_calls(event, ticket):
        response = getattr(api, method)(url, body, format="json")
        assert (method, url, response.status_code, response.json()) == (
            method,
            url,
            403,
            {
                "success": False,
                "error": "insufficient_scope",
                "message": f"This call needs the '{scope}' scope.",
            },
        )
        assert response["WWW-Authenticate"] == (
            f'Bearer error="insufficient_scope", scope="{scope}"'
        )
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.ACTIVE
    assert not event.organizer.webhook_endpoints.exists()


def test_page_token_works_on_the_check_in_routes(page):
    api, event, ticket = page

    admitted = api.post(f"{_event(event)}/tickets/checkin", {"reference_code": "GATE0001"})
    assert (admitted.status_code, admitted.json()["ticket"]["status"]) == (200, "used")
    stats = api.get(f"{_event(event)}/check_in_stats")
    assert (stats.status_code, stats.json()["tickets"]["used"]) == (200, 1)
    undone = api.post(f"{_event(event)}/tickets/renew", {"ticket_id": ticket.pk})
    assert (undone.status_code, undone.json()["ticket"]["status"]) == (200, "active")
    sync = api.get(f"{_event(event)}/tickets/sync")
    # What the feed holds is its own tests' (committed rows only, on PostgreSQL).
    assert (sync.status_code, sync.json()["success"]) == (200, True)
    batch = api.post(
        f"{_event(event)}/checkins",
        {"scans": [{"id": "scan-00001", "used_at": AT, "ticket_id": ticket.pk}]},
        format="json",
    )
    assert batch.status_code == 200, batch.json()
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED


@override_settings(CHECK_IN_TOKEN_RATE_LIMIT="3/m")
def test_page_hands_out_tokens_at_a_bounded_rate_per_user(organizer):
    users = [UserFactory(username="gate"), UserFactory(username="door")]
    browsers = []
    for user in users:
        MembershipFactory(user=user, organizer=organizer, role="staff")
        wait_for_fresh_window(str(user.pk))
        browser = Client()
        browser.force_login(user)
        browsers.append(browser)
    gate, door = browsers

    assert [gate.post(reverse("checkin_page:token")).status_code for _ in range(3)] == [200] * 3
    refused = gate.post(reverse("checkin_page:token"))

    assert refused.status_code == 429
    retry_after = int(refused["Retry-After"])
    assert 1 <= retry_after <= 60
    assert refused.json() == {
        "success": False,
        "error": "rate_limited",
        "message": f"Too many requests; try again in {retry_after} seconds.",
    }
    assert door.post(reverse("checkin_page:token")).status_code == 200

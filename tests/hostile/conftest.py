"""Hostile input: the fixtures and the one assertion every case shares.

Every hostile request must end in a contract-shaped JSON error with the right status (CONTRACT
§2) or a correct success: never a 500, never a trace, never HTML.
"""

import json

import pytest

from tests.factories import TicketFactory
from tickets.models import CheckInLog, Ticket

INT32_MAX = 2**31 - 1
BEYOND_INT32 = ["2147483648", "-2147483649", "99999999999999999999", "9" * 40]

CODES_BY_STATUS = {
    400: {"invalid_parameters"},
    401: {"invalid_token", "organizer_mismatch"},
    403: {
        "insufficient_scope",
        "application_not_owned",
        "not_organizer_member",
        "user_token_required",
    },
    404: {"not_found"},
    405: {"method_not_allowed"},
    409: {"duplicate_external_id", "duplicate_reference_code", "duplicate_nfc_uid"},
    422: {
        "quota_exceeded",
        "ticket_revoked",
        "ticket_already_used",
        "ticket_not_used",
        "order_not_paid",
        "event_not_active",
        "check_in_type_required",
    },
    429: {"rate_limited"},
}


def contract_error(response, status: int, code: str | None = None) -> dict:
    """Assert the response is the contract's error body with `status` (and `code`); return it."""
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    body = json.loads(response.content)
    assert body["success"] is False
    assert body["error"] in CODES_BY_STATUS[status], body
    if code is not None:
        assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in body["message"] and "SELECT" not in body["message"]
    if status == 400:
        assert isinstance(body["fields"], dict) and body["fields"], body
    return body


def no_injected_headers(response) -> None:
    for name, value in response.items():
        assert "\r" not in name + value and "\n" not in name + value, (name, value)
    assert not response.has_header("Set-Cookie")
    assert not response.has_header("X-Injected")


@pytest.fixture
def ticket(event, ticket_type):
    return TicketFactory(
        event=event, ticket_type=ticket_type, reference_code="HOSTILE01", nfc_uid=None
    )


@pytest.fixture
def event_path(event) -> str:
    return f"/api/public/organizers/{event.organizer_id}/events/{event.id}"


@pytest.fixture
def unchanged(event):
    """Snapshot of the event's tickets and audit rows; call it again to compare."""

    def snapshot():
        return (
            list(Ticket.objects.filter(event=event).order_by("pk").values()),
            list(CheckInLog.objects.filter(ticket__event=event).order_by("pk").values()),
        )

    return snapshot

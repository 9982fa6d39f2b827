"""Header injection: CR/LF in reference codes and headers never reaches a response header."""

import pytest

from tests.hostile.helpers import contract_error, no_injected_headers
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

INJECTIONS = [
    "ABC123\r\nSet-Cookie: session=stolen",
    "ABC123\nX-Injected: 1",
    "ABC123%0d%0aSet-Cookie:%20a=b",
    "ABC123\r\n\r\n<html>smuggled</html>",
    "ABC123\u2028X-Injected: 1",
]


@pytest.mark.parametrize("code", INJECTIONS)
def test_reference_code_with_line_breaks_is_refused_at_creation(
    organizer_client, event_path, ticket_type, code, unchanged
):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets",
        {
            "ticket_type_id": ticket_type.id,
            "firstname": "A",
            "lastname": "B",
            "email": "a@example.com",
            "phone": "0812345678",
            "reference_code": code,
        },
        format="json",
    )
    body = contract_error(response, 400, "invalid_parameters")
    assert list(body["fields"]) == ["reference_code"]
    no_injected_headers(response)
    assert unchanged() == before


@pytest.mark.parametrize("code", INJECTIONS)
def test_reference_code_with_line_breaks_finds_nothing(organizer_client, event_path, ticket, code):
    response = organizer_client.get(f"{event_path}/tickets/search", {"reference_code": code})
    contract_error(response, 404, "not_found")
    no_injected_headers(response)
    response = organizer_client.get(
        "/api/public/tickets/search", {"event_id": ticket.event_id, "reference_code": code}
    )
    contract_error(response, 404, "not_found")
    no_injected_headers(response)


@pytest.mark.parametrize("code", INJECTIONS)
def test_reference_code_with_line_breaks_revokes_nothing(
    organizer_client, event_path, ticket, code, unchanged
):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/invalidate", {"reference_code": code, "reason": "x"}, format="json"
    )
    contract_error(response, 404, "not_found")
    no_injected_headers(response)
    assert unchanged() == before


def test_reference_code_surrounded_by_whitespace_still_matches(
    organizer_client, event_path, ticket
):
    """CONTRACT §7: lookups ignore case and surrounding spaces (tabs and newlines included)."""
    response = organizer_client.get(
        f"{event_path}/tickets/search", {"reference_code": "\t hostile01 \r\n"}
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == ticket.id
    no_injected_headers(response)


@pytest.mark.parametrize(
    "header",
    ["HTTP_AUTHORIZATION", "HTTP_X_REQUEST_ID", "HTTP_X_FORWARDED_FOR", "HTTP_USER_AGENT"],
)
def test_line_breaks_in_request_headers_are_not_reflected(api_client, event_path, header):
    response = api_client.get(f"{event_path}/tickets", **{header: "x\r\nX-Injected: 1"})
    contract_error(response, 401, "invalid_token")
    no_injected_headers(response)


def test_created_ticket_reference_code_is_plain(organizer_client, event_path, ticket_type):
    """A valid custom code is stored upper-case and comes back in the body, not in a header."""
    response = organizer_client.post(
        f"{event_path}/tickets",
        {
            "ticket_type_id": ticket_type.id,
            "firstname": "A",
            "lastname": "B",
            "email": "a@example.com",
            "phone": "0812345678",
            "reference_code": "  safe-code-1 ",
        },
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["reference_code"] == "SAFE-CODE-1"
    assert Ticket.objects.get().reference_code == "SAFE-CODE-1"
    no_injected_headers(response)

"""Ids beyond int32 (and other non-ids) in the path, the query and the body (CONTRACT §2)."""

import pytest

from tests.hostile.helpers import BEYOND_INT32, contract_error

pytestmark = pytest.mark.django_db

HUGE_POSITIVE = [v for v in BEYOND_INT32 if not v.startswith("-")]


@pytest.mark.parametrize("huge", HUGE_POSITIVE)
@pytest.mark.parametrize(
    ("method", "template"),
    [
        ("get", "/api/public/organizers/{huge}/events"),
        ("get", "/api/public/organizers/{huge}/tickets"),
        ("get", "/api/public/organizers/{huge}/orders"),
        ("get", "/api/public/organizers/{o}/events/{huge}"),
        ("get", "/api/public/organizers/{o}/events/{huge}/tickets"),
        ("get", "/api/public/organizers/{o}/events/{huge}/tickets/search?ticket_id=1"),
        ("get", "/api/public/organizers/{o}/events/{huge}/check_in_types"),
        ("post", "/api/public/organizers/{o}/events/{e}/tickets/{huge}/checkin"),
        ("post", "/api/public/organizers/{o}/events/{e}/tickets/{huge}/renew"),
        ("post", "/api/public/organizers/{huge}/events/{e}/tickets/{t}/checkin"),
    ],
)
def test_id_beyond_int32_in_the_path_is_404(organizer_client, ticket, method, template, huge):
    event = ticket.event
    path = template.format(huge=huge, o=event.organizer_id, e=event.id, t=ticket.id)
    response = getattr(organizer_client, method)(path)
    contract_error(response, 404, "not_found")
    ticket.refresh_from_db()
    assert ticket.status == "active"


@pytest.mark.parametrize("huge", BEYOND_INT32)
@pytest.mark.parametrize(
    "query",
    [
        "page={huge}",
        "per_page={huge}",
        "max_id={huge}",
        "min_id={huge}",
        "ticket_type_id={huge}",
    ],
)
def test_id_beyond_int32_in_the_tickets_query_is_400(organizer_client, event_path, query, huge):
    response = organizer_client.get(f"{event_path}/tickets?{query.format(huge=huge)}")
    body = contract_error(response, 400, "invalid_parameters")
    assert query.split("=")[0] in body["fields"], body


@pytest.mark.parametrize("huge", BEYOND_INT32)
def test_id_beyond_int32_in_searches_is_400(organizer_client, ticket, event_path, huge):
    contract_error(organizer_client.get(f"{event_path}/tickets/search?ticket_id={huge}"), 400)
    contract_error(
        organizer_client.get(f"/api/public/tickets/search?event_id={huge}&reference_code=ABCDEF"),
        400,
    )


@pytest.mark.parametrize("huge", BEYOND_INT32)
@pytest.mark.parametrize("as_json", [False, True])
def test_id_beyond_int32_in_bodies_is_400_and_changes_nothing(
    organizer_client, ticket, event_path, unchanged, huge, as_json
):
    before = unchanged()
    fmt = "json" if as_json else None
    number = int(huge)
    cases = [
        (
            f"{event_path}/tickets",
            {
                "ticket_type_id": number if as_json else huge,
                "firstname": "A",
                "lastname": "B",
                "email": "a@example.com",
                "phone": "0812345678",
            },
            "ticket_type_id",
        ),
        (
            f"{event_path}/tickets/{ticket.id}/checkin",
            {"check_in_type_ids": [number] if as_json else huge},
            "check_in_type_ids",
        ),
        (
            f"{event_path}/tickets/invalidate",
            {"ticket_id": number if as_json else huge},
            "ticket_id",
        ),
    ]
    for path, data, field in cases:
        body = contract_error(organizer_client.post(path, data, format=fmt), 400)
        assert field in body["fields"], (path, body)
    assert unchanged() == before


@pytest.mark.parametrize(
    "value", ["1.5", "1e3", "0x10", "true", "", " ", "NaN", "Infinity", "1;DROP TABLE x"]
)
def test_non_integer_ids_in_query_are_400(organizer_client, event_path, value):
    response = organizer_client.get(f"{event_path}/tickets", {"ticket_type_id": value})
    body = contract_error(response, 400, "invalid_parameters")
    assert list(body["fields"]) == ["ticket_type_id"]


def test_unicode_digits_in_query_read_as_the_number(organizer_client, event_path, ticket_type):
    """Python reads fullwidth digits as digits: a filter on type 12, which matches nothing."""
    response = organizer_client.get(f"{event_path}/tickets", {"ticket_type_id": "１２"})
    assert response.status_code == 200
    assert response.json()["total"] == 0


@pytest.mark.parametrize(
    "raw",
    [
        "1.5",
        "true",
        "null",
        '"1e3"',
        "[1, [2]]",
        '{"id": 1}',
        "1e400",
        "9" * 5000,
        "NaN",
        "-Infinity",
    ],
)
def test_non_integer_ids_in_json_body_are_400(organizer_client, ticket, event_path, raw, unchanged):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/invalidate",
        data=f'{{"ticket_id": {raw}}}',
        content_type="application/json",
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


@pytest.mark.parametrize(
    "name", ["page", "per_page", "q", "status", "order", "order_by", "phone", "min_id"]
)
def test_list_parameter_sent_empty_is_400(organizer_client, event_path, name):
    """Empty is not "the default" (CONTRACT §6: any other value is a 400); the document says so
    with `minLength`, and a client that means the default leaves the parameter out."""
    body = contract_error(organizer_client.get(f"{event_path}/tickets?{name}="), 400)
    assert name in body["fields"], body

"""JSON nesting bombs and oversized structures, in bodies and in the `q` filter."""

import json

import pytest

from tests.hostile.helpers import contract_error

pytestmark = pytest.mark.django_db

DEPTH = 100_000  # 200 kB of brackets: under the 1 MB body limit, far over any parser's stack


@pytest.mark.parametrize(
    "bomb",
    [
        "[" * DEPTH + "]" * DEPTH,
        '{"a":' * DEPTH + "1" + "}" * DEPTH,
        '{"note": ' + "[" * DEPTH + "]" * DEPTH + "}",
        '{"check_in_type_ids": ' + "[" * DEPTH + "]" * DEPTH + "}",
    ],
    ids=["array", "object", "in-a-field", "in-the-id-list"],
)
def test_json_nesting_bomb_in_the_body_is_400(
    organizer_client, event_path, ticket, bomb, unchanged
):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin", data=bomb, content_type="application/json"
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


def test_json_nesting_bomb_without_a_token_header_is_400(api_client, event_path, ticket, unchanged):
    """The token may travel in the JSON body, so authentication parses the bomb first."""
    before = unchanged()
    response = api_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        data="[" * DEPTH + "]" * DEPTH,
        content_type="application/json",
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


@pytest.mark.parametrize("depth", [50, 3000])
def test_nested_lists_in_check_in_type_ids_are_400(
    organizer_client, event_path, ticket, depth, unchanged
):
    before = unchanged()
    nested = "[" * depth + "1" + "]" * depth
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        data=f'{{"check_in_type_ids": {nested}}}',
        content_type="application/json",
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


@pytest.mark.parametrize("depth", [50, 3000])
def test_nesting_bomb_in_the_q_filter_is_400(organizer_client, event_path, depth):
    q = '{"status": ' + "[" * depth + "]" * depth + "}"
    response = organizer_client.get(f"{event_path}/tickets", {"q": q})
    contract_error(response, 400, "invalid_parameters")


def test_nesting_bomb_as_a_form_value_holding_json_is_400(
    organizer_client, event_path, ticket, unchanged
):
    """CONTRACT §1 lets a form value hold a JSON array: `check_in_type_ids=[[[...]]]`."""
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        {"check_in_type_ids": "[" * 5000 + "]" * 5000},
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


def test_a_hundred_thousand_ids_is_400(organizer_client, event_path, ticket, unchanged):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        data=json.dumps({"check_in_type_ids": list(range(1, 100_001))}),
        content_type="application/json",
    )
    body = contract_error(response, 400, "invalid_parameters")
    assert "check_in_type_ids" in body["fields"]
    assert unchanged() == before


def test_forty_thousand_unknown_keys_are_ignored(organizer_client, event_path, ticket):
    """Unknown keys are ignored, however many: the check-in itself is valid."""
    payload = {f"k{n}": n for n in range(40_000)}  # 600 kB, under the limit
    payload["note"] = "wide"
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        data=json.dumps(payload),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "used"


def test_number_with_thousands_of_digits_is_400(organizer_client, event_path, ticket, unchanged):
    """Python refuses to parse integers over 4300 digits (a CPU bomb): malformed JSON."""
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/invalidate",
        data='{"ticket_id": ' + "7" * 100_000 + "}",
        content_type="application/json",
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before

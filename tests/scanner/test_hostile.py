"""Hostile inputs to the scanner endpoints: every one a JSON 400 (or a per-scan failure), never
a 500 (CONTRACT §2)."""

import json

import pytest

from checkin.models import ScanRecord
from tests.factories import TicketFactory

from .helpers import batch_url, stats_url, sync_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "params",
    [
        {"cursor": "a\x00b"},
        {"cursor": "x" * 5000},
        {"limit": "1e3"},
        {"limit": "\x00"},
        {"cursor": "1.2.3:" + "A" * 27},
    ],
)
def test_sync_hostile_query_is_400(client, event, params):
    response = client.get(sync_url(event), params)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_parameters"


@pytest.mark.parametrize("params", [{"cursor": ""}, {"limit": ""}])
def test_sync_parameter_sent_empty_is_400(client, event, params):
    """As every list parameter (CONTRACT §6): leave it out to mean the default."""
    response = client.get(sync_url(event), params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["error"], list(body["fields"])) == ("invalid_parameters", list(params))


def test_batch_oversized_body_is_400_and_applies_nothing(client, event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    scans = [
        {
            "id": f"big-{i:05d}",
            "ticket_id": ticket.id,
            "used_at": "2026-01-10T12:00Z",
            "note": "x" * 3000,
        }
        for i in range(400)
    ]
    response = client.post(
        batch_url(event), json.dumps({"scans": scans}), content_type="application/json"
    )
    assert (response.status_code, response.json()["error"]) == (400, "invalid_parameters")
    assert not ScanRecord.objects.exists()


def test_batch_deeply_nested_json_is_400(client, event):
    raw = '{"scans": ' + "[" * 5000 + "]" * 5000 + "}"
    response = client.post(batch_url(event), raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"


@pytest.mark.parametrize(
    "fields",
    [
        {"ticket_id": 2**40},
        {"ticket_id": True},
        {"ticket_id": [1]},
        {"reference_code": {"a": 1}},
        {"reference_code": "AB\x00CD12"},
        {"nfc_uid": "x" * 65},
        {"check_in_type_ids": [2**40]},
        {"check_in_type_ids": [[1]]},
        {"action": None},
        {"used_at": 12345},
        {"used_at": "1999-12-31T23:59:59Z"},
    ],
)
def test_batch_scan_with_hostile_fields_fails_alone(client, event, ticket_type, fields):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    scan = {"id": "hostile-01", "ticket_id": ticket.id, "used_at": "2026-01-10T12:00Z", **fields}
    if "reference_code" in fields or "nfc_uid" in fields:
        del scan["ticket_id"]
    response = client.post(batch_url(event), {"scans": [scan]}, format="json")
    assert response.status_code == 200, response.content
    result = response.json()["results"][0]
    assert (result["success"], result["error"]) == (False, "invalid_parameters")


@pytest.mark.parametrize(
    "scans",
    [
        None,
        "[]",
        5,
        {"id": "x"},
        [None],
        [[]],
        [{"id": ["a" * 8]}],
        [{"id": "a" * 8 + "\n", "ticket_id": 1}],  # `$` would let a final newline through
        [{"id": "a" * 64 + "\n", "ticket_id": 1}],
        [{"id": "abcdefg\u00b2", "ticket_id": 1}],
    ],
)
def test_batch_with_hostile_scans_is_400(client, event, scans):
    response = client.post(batch_url(event), {"scans": scans}, format="json")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_parameters")


def test_stats_ignores_its_query_and_answers(client, event):
    response = client.get(stats_url(event), {"x": "\x00" * 10})
    assert response.status_code == 200

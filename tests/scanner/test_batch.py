"""POST .../events/{e}/checkins: a scanner uploads the scans it made offline (CONTRACT §11)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from checkin.models import CheckInLog, ScanRecord
from tests.factories import CheckInTypeFactory, EventFactory, OrderFactory, TicketFactory
from tests.write_api.helpers import db_state
from tickets.models import Order, Ticket

from .helpers import batch_url

pytestmark = pytest.mark.django_db

AT = "2026-01-10T19:30:00+07:00"


def upload(client, event, scans, status: int = 200) -> dict:
    response = client.post(batch_url(event), {"scans": scans}, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def scan(scan_id: str, **fields) -> dict:
    return {"id": scan_id, "used_at": AT, **fields}


def test_batch_applies_scans_in_order_by_id_code_and_tag(client, event, ticket_type, member):
    by_id, by_code, by_tag = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(3))
    Ticket.objects.filter(pk=by_tag.pk).update(nfc_uid="04A1B2")

    body = upload(
        client,
        event,
        [
            scan("scan-0001", ticket_id=by_id.id, note="north"),
            scan("scan-0002", reference_code=f"  {by_code.reference_code.lower()} "),
            scan("scan-0003", nfc_uid="04A1B2"),
        ],
    )

    assert body["success"] is True
    assert [(r["id"], r["success"], r["error"], r["replayed"]) for r in body["results"]] == [
        ("scan-0001", True, None, False),
        ("scan-0002", True, None, False),
        ("scan-0003", True, None, False),
    ]
    first = body["results"][0]
    assert first["ticket"] == {
        "id": by_id.id,
        "reference_code": by_id.reference_code,
        "nfc_uid": None,
        "status": "used",
        "order_paid": True,
        "ticket_type_id": ticket_type.id,
        "ticket_type_name": "Regular",
        "firstname": by_id.firstname,
        "lastname": by_id.lastname,
        "used_at": AT,
        "checked_in_type_ids": [],
        "updated_at": first["ticket"]["updated_at"],
    }
    assert (first["message"], first["check_in_results"], first["renew_results"]) == (
        f"Ticket {by_id.reference_code} checked in.",
        [],
        [],
    )
    logs = list(
        CheckInLog.objects.order_by("pk").values_list(
            "ticket_id",
            "event_id",
            "scan_id",
            "error",
            "action",
            "nfc_uid",
            "note",
            "actor_user_id",
        )
    )
    assert logs == [
        (by_id.id, event.id, "scan-0001", None, "check_in", None, "north", member.id),
        (by_code.id, event.id, "scan-0002", None, "check_in", None, "", member.id),
        (by_tag.id, event.id, "scan-0003", None, "check_in", "04A1B2", "", member.id),
    ]
    assert set(Ticket.objects.values_list("status", flat=True)) == {"used"}


def test_batch_rejections_have_their_codes_and_keep_the_scan_log(client, event, ticket_type):
    used = TicketFactory(event=event, ticket_type=ticket_type, status=Ticket.Status.USED)
    revoked = TicketFactory(event=event, ticket_type=ticket_type, status=Ticket.Status.REVOKED)
    unpaid = TicketFactory(
        event=event,
        ticket_type=ticket_type,
        order=OrderFactory(event=event, status=Order.Status.PENDING),
    )
    active = TicketFactory(event=event, ticket_type=ticket_type)
    other_event_ticket = TicketFactory()

    body = upload(
        client,
        event,
        [
            scan("rej-used", ticket_id=used.id),
            scan("rej-revoked", ticket_id=revoked.id),
            scan("rej-unpaid", ticket_id=unpaid.id),
            scan("rej-missing", reference_code="NOSUCH01"),
            scan("rej-foreign", ticket_id=other_event_ticket.id),
            scan("rej-not-used", ticket_id=active.id, action="renew"),
            scan("ok-checkin", ticket_id=active.id),
        ],
    )

    assert body["success"] is False
    assert [(r["id"], r["success"], r["error"]) for r in body["results"]] == [
        ("rej-used", False, "ticket_already_used"),
        ("rej-revoked", False, "ticket_revoked"),
        ("rej-unpaid", False, "order_not_paid"),
        ("rej-missing", False, "not_found"),
        ("rej-foreign", False, "not_found"),
        ("rej-not-used", False, "ticket_not_used"),
        ("ok-checkin", True, None),
    ]
    results = {r["id"]: r for r in body["results"]}
    assert results["rej-used"]["ticket"]["id"] == used.id
    assert results["rej-used"]["message"].startswith(f"Ticket {used.reference_code} was checked")
    assert results["rej-missing"]["ticket"] is None
    assert Ticket.objects.get(pk=active.pk).status == "used"
    # Every scan is in the scan log; a rejection with a known ticket also in the audit rows.
    assert dict(ScanRecord.objects.values_list("scan_id", "error")) == {
        r["id"]: r["error"] for r in body["results"]
    }
    assert sorted(
        CheckInLog.objects.filter(error__isnull=False).values_list("scan_id", "error", "ticket_id")
    ) == [
        ("rej-not-used", "ticket_not_used", active.id),
        ("rej-revoked", "ticket_revoked", revoked.id),
        ("rej-unpaid", "order_not_paid", unpaid.id),
        ("rej-used", "ticket_already_used", used.id),
    ]


def test_batch_renew_undoes_a_check_in(client, event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, status=Ticket.Status.USED)
    body = upload(client, event, [scan("renew-001", ticket_id=ticket.id, action="renew")])
    assert (body["results"][0]["success"], body["results"][0]["ticket"]["status"]) == (
        True,
        "active",
    )
    assert CheckInLog.objects.get().action == "renew"


@pytest.mark.parametrize(
    "fields",
    [
        {},  # no ticket key
        {"ticket_id": 1, "reference_code": "ABCDEF01"},  # several
        {"ticket_id": "one"},
        {"ticket_id": 1, "used_at": "yesterday"},
        {"ticket_id": 1, "used_at": None},
        {"ticket_id": 1, "used_at": "2099-01-01T00:00:00Z"},  # too far ahead
        {"ticket_id": 1, "action": "delete"},
        {"ticket_id": 1, "check_in_type_ids": "x"},
        {"ticket_id": 1, "note": 5},
    ],
)
def test_batch_scan_malformed_alone_fails_alone_and_replays_as_such(
    client, event, ticket_type, fields
):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    bad = {"id": "bad-scan-1", "used_at": AT, **fields}
    if fields.get("ticket_id") == 1:
        bad["ticket_id"] = ticket.id
    good = scan("good-scan", ticket_id=ticket.id)

    body = upload(client, event, [bad, good])
    again = upload(client, event, [{**bad, "ticket_id": ticket.id}])

    first = body["results"][0]
    assert (first["success"], first["error"], first["ticket"], first["replayed"]) == (
        False,
        "invalid_parameters",
        None,
        False,
    )
    assert (body["results"][1]["success"], body["results"][1]["error"]) == (True, None)
    assert again["results"] == [{**first, "replayed": True}]
    assert CheckInLog.objects.count() == 1  # the good scan only


def test_batch_replay_returns_the_first_result_and_changes_nothing(client, event, ticket_type):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2)]
    scans = [scan(f"replay-{t.id:04d}", ticket_id=t.id) for t in tickets]
    first = upload(client, event, scans)
    before = db_state(event), list(ScanRecord.objects.values())

    second = upload(client, event, [*reversed(scans), scan("fresh-001", ticket_id=tickets[0].id)])

    assert second["results"][:2] == [
        {**result, "replayed": True} for result in reversed(first["results"])
    ]
    assert (second["results"][2]["error"], second["results"][2]["replayed"]) == (
        "ticket_already_used",
        False,
    )
    after = db_state(event)
    assert after["tickets"] == before[0]["tickets"]
    assert CheckInLog.objects.filter(error__isnull=True).count() == 2


def test_batch_scan_id_is_per_event(client, event, ticket_type, organizer):
    other = EventFactory(organizer=organizer)
    here = TicketFactory(event=event, ticket_type=ticket_type)
    there = TicketFactory(event=other)
    upload(client, event, [scan("same-id-1", ticket_id=here.id)])
    body = upload(client, other, [scan("same-id-1", ticket_id=there.id)])
    assert (body["results"][0]["success"], body["results"][0]["replayed"]) == (True, False)


def test_batch_multiple_mode_types_and_required(client, event, ticket_type):
    day1, day2 = (CheckInTypeFactory(event=event, name=n) for n in ("Day 1", "Day 2"))
    ticket = TicketFactory(event=event, ticket_type=ticket_type)

    body = upload(
        client,
        event,
        [
            scan("multi-001", ticket_id=ticket.id),
            scan("multi-002", ticket_id=ticket.id, check_in_type_ids=[day1.id]),
            scan("multi-003", ticket_id=ticket.id, check_in_type_ids=[day1.id, day2.id]),
        ],
    )

    results = body["results"]
    assert [(r["success"], r["error"]) for r in results] == [
        (False, "check_in_type_required"),
        (True, None),
        (False, None),  # applied, but day 1 was already checked in
    ]
    assert [(t["check_in_type_id"], t["success"]) for t in results[2]["check_in_results"]] == [
        (day1.id, False),
        (day2.id, True),
    ]
    assert results[1]["ticket"]["checked_in_type_ids"] == [day1.id]
    assert results[2]["ticket"]["checked_in_type_ids"] == sorted([day1.id, day2.id])


def _malformed():
    scans = [scan(f"scan-{i:05d}", ticket_id=1) for i in range(2)]
    return [
        ("list body", json.dumps(scans)),
        ("text", '"scans"'),
        ("no scans", json.dumps({})),
        ("scans not a list", json.dumps({"scans": {"id": "scan-00001"}})),
        ("empty", json.dumps({"scans": []})),
        ("501", json.dumps({"scans": [scan(f"scan-{i:05d}") for i in range(501)]})),
        ("scan not object", json.dumps({"scans": [scans[0], "scan-00001"]})),
        ("id missing", json.dumps({"scans": [scans[0], {"ticket_id": 1, "used_at": AT}]})),
        ("id short", json.dumps({"scans": [scans[0], scan("short", ticket_id=1)]})),
        ("id bad chars", json.dumps({"scans": [scans[0], scan("scan 0001!", ticket_id=1)]})),
        ("id number", json.dumps({"scans": [scans[0], {**scans[1], "id": 12345678}]})),
        ("duplicate ids", json.dumps({"scans": [scans[0], scans[0]]})),
        ("broken json", '{"scans": [}'),
    ]


@pytest.mark.parametrize("name, raw", _malformed(), ids=[m[0] for m in _malformed()])
def test_batch_malformed_is_400_and_applies_nothing(client, event, ticket_type, name, raw):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    raw = raw.replace('"ticket_id": 1', f'"ticket_id": {ticket.id}')
    before = db_state(event)

    response = client.post(batch_url(event), raw, content_type="application/json")

    assert response.status_code == 400, name
    body = response.json()
    assert (body["success"], body["error"]) == (False, "invalid_parameters")
    assert isinstance(body["fields"], dict) and body["fields"]
    assert db_state(event) == before
    assert not ScanRecord.objects.exists()


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain"])
def test_batch_form_or_text_body_is_400(client, event, content_type):
    response = client.post(batch_url(event), "scans=1", content_type=content_type)
    assert response.status_code in (400, 415)
    assert response.json()["success"] is False


def test_batch_costs_a_bounded_number_of_statements_per_scan(client, event, ticket_type):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(20)]
    upload(client, event, [scan("warm-0001", reference_code="NOSUCH01")])
    with CaptureQueriesContext(connection) as queries:
        upload(client, event, [scan(f"cost-{t.id:05d}", ticket_id=t.id) for t in tickets])
    # PostgreSQL: the one-statement admission and the scan's record, in a transaction (here a
    # savepoint); SQLite: the locked path.
    per_scan = 4 if connection.vendor == "postgresql" else 9
    # The membership, the event, the known scan ids, the mode, the organizer's webhook
    # subscriptions (once); then each scan's own statements.
    assert len(queries) <= 5 + per_scan * len(tickets)

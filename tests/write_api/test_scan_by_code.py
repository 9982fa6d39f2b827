"""POST .../events/{e}/tickets/checkin and .../tickets/renew: a gate names the ticket it scanned
by `reference_code`, `nfc_uid` or `ticket_id` (CONTRACT §7, "Check in or renew by scanned code").
"""

import re
from contextlib import contextmanager
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from checkin.models import CheckInLog, TicketCheckIn
from checkin.services import gate
from checkin.services import statements as admission
from events.models import Event
from tests.factories import CheckInTypeFactory, EventFactory, OrderFactory, TicketFactory
from tickets.models import Ticket

from .helpers import checkin_url, client_for, db_state, renew_url, tickets_url
from .test_races import run_at_once

pytestmark = pytest.mark.django_db


def scan_checkin_url(event) -> str:
    return f"{tickets_url(event)}/checkin"


def scan_renew_url(event) -> str:
    return f"{tickets_url(event)}/renew"


@pytest.fixture
def client(user_token):
    return client_for(user_token)


def _audit(ticket) -> list[dict]:
    return list(
        CheckInLog.objects.filter(ticket=ticket)
        .order_by("pk")
        .values("action", "check_in_type_id", "actor_user_id", "actor_application_id", "nfc_uid")
    )


# --- Naming the ticket ------------------------------------------------------------------------


@pytest.mark.parametrize("body_format", ["json", "multipart", "form"])
@pytest.mark.parametrize("code", ["GATE0001", "gate0001", "  Gate0001 \t", "\n gAtE0001"])
def test_scan_check_in_by_reference_code_ignores_case_and_surrounding_spaces(
    client, ticket, member, application, code, body_format
):
    body = {"reference_code": code, "note": "north gate"}
    if body_format == "form":
        response = client.post(
            scan_checkin_url(ticket.event),
            urlencode(body),
            content_type="application/x-www-form-urlencoded",
        )
    else:
        response = client.post(scan_checkin_url(ticket.event), body, format=body_format)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["success"], body["check_in_results"], body["renew_results"]) == (True, [], [])
    assert (body["ticket"]["id"], body["ticket"]["status"]) == (ticket.id, "used")
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    log = CheckInLog.objects.get()
    assert (log.ticket_id, log.action, log.check_in_type_id, log.nfc_uid) == (
        ticket.id,
        "check_in",
        None,
        None,
    )
    assert (log.actor_user_id, log.actor_application_id) == (member.id, application.id)
    assert (log.at, log.note) == (ticket.used_at, "north gate")


def test_scan_check_in_by_nfc_uid_records_the_tag_and_binds_nothing(app_token, event, application):
    ticket = TicketFactory(event=event, nfc_uid="04A1B2C3")
    response = client_for(app_token).post(scan_checkin_url(event), {"nfc_uid": "04A1B2C3"})

    assert response.status_code == 200, response.json()
    assert response.json()["ticket"]["id"] == ticket.id
    assert Ticket.objects.values_list("status", "nfc_uid").get(pk=ticket.pk) == (
        "used",
        "04A1B2C3",
    )
    log = CheckInLog.objects.get()
    assert (log.ticket_id, log.nfc_uid, log.actor_user_id, log.actor_application_id) == (
        ticket.id,
        "04A1B2C3",
        None,
        application.id,
    )


def test_scan_check_in_by_ticket_id(client, ticket):
    response = client.post(scan_checkin_url(ticket.event), {"ticket_id": ticket.id}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["ticket"]["id"], response.json()["ticket"]["status"]) == (
        ticket.id,
        "used",
    )


def test_scan_answers_exactly_as_the_check_in_by_id(client, event, ticket_type):
    """Same body and audit row as `.../tickets/{t}/checkin`, but for what names the ticket."""
    by_id, by_code = (
        TicketFactory(
            event=event,
            ticket_type=ticket_type,
            firstname="Anan",
            lastname="Wong",
            email="a@x.example",
        )
        for _ in range(2)
    )
    inputs = {"used_at": "2026-01-10T08:15:00Z", "note": "gate 2"}
    first = client.post(checkin_url(by_id), inputs, format="json")
    second = client.post(
        scan_checkin_url(event),
        {"reference_code": by_code.reference_code.lower(), **inputs},
        format="json",
    )
    assert first.status_code == second.status_code == 200
    own = {"id", "reference_code", "ticket_url", "created_at", "updated_at", "order_id"}
    tickets = [r.json().pop("ticket") for r in (first, second)]
    assert [{k: v for k, v in t.items() if k not in own} for t in tickets] == [
        {k: v for k, v in tickets[0].items() if k not in own}
    ] * 2
    assert first.json().keys() == second.json().keys()
    assert _audit(by_id) == _audit(by_code)


@pytest.mark.parametrize(
    "key", [{"reference_code": "NOSUCH01"}, {"nfc_uid": "04FFFF"}, {"ticket_id": 2147483647}]
)
def test_scan_of_no_ticket_of_the_event_is_404_and_changes_nothing(client, ticket, key):
    before = db_state(ticket.event)
    response = client.post(scan_checkin_url(ticket.event), key, format="json")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert db_state(ticket.event) == before


@pytest.mark.parametrize("key", ["reference_code", "nfc_uid", "ticket_id"])
@pytest.mark.parametrize("url", [scan_checkin_url, scan_renew_url])
def test_scan_of_a_ticket_of_another_event_is_404(client, event, organizer, key, url):
    """The other event is the same organizer's: a key is unique only within its event."""
    other = TicketFactory(
        event=EventFactory(organizer=organizer),
        reference_code="OTHER001",
        nfc_uid="04OTHER",
        status=Ticket.Status.USED if url is scan_renew_url else Ticket.Status.ACTIVE,
    )
    value = {"reference_code": "other001", "nfc_uid": "04OTHER", "ticket_id": other.id}[key]
    before = db_state(other.event)
    response = client.post(url(event), {key: value}, format="json")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert db_state(other.event) == before


def test_scan_of_another_organizers_event_is_404(client, organizer, other_organizer):
    foreign = TicketFactory(
        event=EventFactory(organizer=other_organizer), reference_code="FOREIGN1"
    )
    response = client.post(
        f"/api/public/organizers/{organizer.id}/events/{foreign.event_id}/tickets/checkin",
        {"reference_code": "FOREIGN1"},
    )
    assert response.status_code == 404
    assert Ticket.objects.get(pk=foreign.pk).status == Ticket.Status.ACTIVE
    assert not CheckInLog.objects.exists()


def test_scan_of_an_unknown_event_is_404_even_with_a_bad_body(client, organizer):
    response = client.post(
        f"/api/public/organizers/{organizer.id}/events/2147483647/tickets/checkin", {}
    )
    assert response.status_code == 404


@pytest.mark.parametrize("url", [scan_checkin_url, scan_renew_url])
@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, ["reference_code", "nfc_uid", "ticket_id"]),
        ({"note": "no key"}, ["reference_code", "nfc_uid", "ticket_id"]),
        ({"reference_code": "GATE0001", "nfc_uid": "04AABB"}, ["reference_code", "nfc_uid"]),
        ({"reference_code": "GATE0001", "ticket_id": 1}, ["reference_code", "ticket_id"]),
        ({"nfc_uid": "04AABB", "ticket_id": 1}, ["nfc_uid", "ticket_id"]),
        (
            {"reference_code": "GATE0001", "nfc_uid": "04AABB", "ticket_id": 1},
            ["reference_code", "nfc_uid", "ticket_id"],
        ),
    ],
)
def test_scan_with_none_or_several_keys_is_400_and_changes_nothing(
    client, ticket, url, body, named
):
    before = db_state(ticket.event)
    response = client.post(url(ticket.event), body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"
    assert sorted(response.json()["fields"]) == sorted(named)
    assert db_state(ticket.event) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reference_code": "   "}, "reference_code"),
        ({"reference_code": ""}, "reference_code"),
        ({"reference_code": None}, "reference_code"),
        ({"reference_code": 12345678}, "reference_code"),
        ({"nfc_uid": ""}, "nfc_uid"),
        ({"ticket_id": "abc"}, "ticket_id"),
        ({"ticket_id": 0}, "ticket_id"),
        ({"ticket_id": 2147483648}, "ticket_id"),
        ({"reference_code": "GATE0001", "check_in_type_ids": "x"}, "check_in_type_ids"),
        ({"reference_code": "GATE0001", "used_at": "1999-12-31T00:00:00Z"}, "used_at"),
    ],
)
def test_scan_with_a_malformed_key_or_input_is_400(client, ticket, body, field):
    response = client.post(scan_checkin_url(ticket.event), body, format="json")
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [field]
    assert Ticket.objects.get(pk=ticket.pk).status == Ticket.Status.ACTIVE


def test_scan_with_an_empty_form_ticket_id_is_400(client, ticket):
    response = client.post(
        scan_checkin_url(ticket.event),
        "ticket_id=",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["ticket_id"]


def test_each_scan_body_is_judged_alone_whatever_came_before(client, event, ticket_type):
    """One validator serves every body of a thread: nothing one body sent or broke reaches
    the next one's answer."""
    first, second = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2))
    url = scan_checkin_url(event)
    bodies = [
        ({"reference_code": first.reference_code, "note": "kept?"}, 200, None),
        (
            {"reference_code": "GATE0001", "ticket_id": second.pk},
            400,
            ["reference_code", "ticket_id"],
        ),
        ({"ticket_id": second.pk, "used_at": "yesterday"}, 400, ["used_at"]),
        ({"ticket_id": second.pk}, 200, None),
    ]
    for body, status, fields in bodies:
        response = client.post(url, body, format="json")
        assert response.status_code == status, response.json()
        if fields:
            assert sorted(response.json()["fields"]) == fields
    assert list(CheckInLog.objects.order_by("pk").values_list("ticket_id", "note")) == [
        (first.pk, "kept?"),
        (second.pk, ""),
    ]


def test_scan_by_an_unbound_tag_is_404_and_binds_nothing(client, ticket):
    response = client.post(scan_checkin_url(ticket.event), {"nfc_uid": "04NEWTAG"})
    assert response.status_code == 404
    assert Ticket.objects.values_list("status", "nfc_uid").get(pk=ticket.pk) == ("active", None)
    assert not CheckInLog.objects.exists()


# --- Same rules as the check-in by id --------------------------------------------------------


def test_scan_of_a_used_ticket_is_422_with_the_ticket(client, ticket):
    first = client.post(
        scan_checkin_url(ticket.event),
        {"reference_code": "gate0001", "used_at": "2026-01-10T12:30:00Z"},
        format="json",
    )
    assert first.status_code == 200
    before = db_state(ticket.event)

    response = client.post(scan_checkin_url(ticket.event), {"reference_code": "GATE0001"})

    assert response.status_code == 422
    body = response.json()
    assert (body["success"], body["error"]) == (False, "ticket_already_used")
    assert body["message"] == "Ticket GATE0001 was checked in at 2026-01-10T19:30:00+07:00."
    assert body["ticket"] == first.json()["ticket"]
    assert db_state(ticket.event) == before


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("revoked", "ticket_revoked"),
        ("pending_order", "order_not_paid"),
        ("draft_event", "event_not_active"),
    ],
)
@pytest.mark.parametrize("url", [scan_checkin_url, scan_renew_url])
def test_scan_rejections_show_the_ticket_and_change_nothing(client, organizer, setup, code, url):
    event = EventFactory(
        organizer=organizer,
        status=Event.Status.DRAFT if setup == "draft_event" else Event.Status.ACTIVE,
    )
    order = OrderFactory(event=event, status="pending" if setup == "pending_order" else "paid")
    status = Ticket.Status.REVOKED if setup == "revoked" else Ticket.Status.ACTIVE
    ticket = TicketFactory(event=event, order=order, status=status, reference_code="REJECT01")
    before = db_state(event)

    response = client.post(url(event), {"reference_code": " reject01 "}, format="json")

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == code
    assert (body["ticket"]["id"], body["ticket"]["status"]) == (ticket.id, status)
    assert db_state(event) == before


def test_scan_in_multiple_mode_admits_the_requested_types(client, event, ticket):
    day1, day2 = CheckInTypeFactory(event=event, name="Day 1"), CheckInTypeFactory(event=event)
    response = client.post(
        scan_checkin_url(event),
        {"reference_code": "gate0001", "check_in_type_ids": [day1.id, 999999]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is False  # one requested type is unknown
    assert [
        (r["check_in_type_id"], r["success"], r["error"]) for r in body["check_in_results"]
    ] == [
        (day1.id, True, None),
        (999999, False, "Unknown check-in type"),
    ]
    assert body["ticket"]["status"] == "used"
    assert [(a["action"], a["check_in_type_id"]) for a in _audit(ticket)] == [("check_in", day1.id)]

    assert list(
        TicketCheckIn.objects.filter(ticket=ticket).values_list("check_in_type_id", flat=True)
    ) == [day1.id]

    required = client.post(scan_checkin_url(event), {"ticket_id": ticket.id}, format="json")
    assert (required.status_code, required.json()["error"]) == (422, "check_in_type_required")
    assert required.json()["ticket"]["id"] == ticket.id
    again = client.post(
        scan_checkin_url(event), {"ticket_id": ticket.id, "check_in_type_ids": [day2.id, day1.id]}
    )
    assert [(r["check_in_type_id"], r["success"]) for r in again.json()["check_in_results"]] == [
        (day2.id, True),
        (day1.id, False),
    ]


# --- Renew by code ----------------------------------------------------------------------------


def test_scan_renew_by_code_undoes_the_check_in(client, ticket, member):
    assert client.post(checkin_url(ticket)).status_code == 200
    response = client.post(
        scan_renew_url(ticket.event), {"reference_code": " gate0001", "note": "wrong gate"}
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["success"], body["check_in_results"], body["renew_results"]) == (True, [], [])
    assert (body["ticket"]["status"], body["ticket"]["used_at"]) == ("active", None)
    renew = CheckInLog.objects.filter(ticket=ticket, action="renew").get()
    assert (renew.note, renew.actor_user_id, renew.nfc_uid) == ("wrong gate", member.id, None)


def test_scan_renew_by_tag_records_it_and_multiple_mode_undoes_types(client, event):
    day1 = CheckInTypeFactory(event=event)
    ticket = TicketFactory(event=event, nfc_uid="04RENEW")
    assert (
        client.post(
            scan_checkin_url(event), {"nfc_uid": "04RENEW", "check_in_type_ids": [day1.id]}
        ).status_code
        == 200
    )
    response = client.post(scan_renew_url(event), {"nfc_uid": "04RENEW"})
    assert response.status_code == 200, response.json()
    assert [(r["check_in_type_id"], r["success"]) for r in response.json()["renew_results"]] == [
        (day1.id, True)
    ]
    assert response.json()["ticket"]["status"] == "active"
    assert [(a["action"], a["nfc_uid"]) for a in _audit(ticket)] == [
        ("check_in", "04RENEW"),
        ("renew", "04RENEW"),
    ]
    assert Ticket.objects.get(pk=ticket.pk).nfc_uid == "04RENEW"


def test_scan_renew_of_an_unused_ticket_is_422_with_the_ticket(client, ticket):
    before = db_state(ticket.event)
    response = client.post(scan_renew_url(ticket.event), {"ticket_id": ticket.id}, format="json")
    assert response.status_code == 422
    assert response.json()["error"] == "ticket_not_used"
    assert response.json()["ticket"]["id"] == ticket.id
    assert db_state(ticket.event) == before


def test_scan_renew_of_an_unknown_code_is_404(client, ticket):
    response = client.post(scan_renew_url(ticket.event), {"reference_code": "NOSUCH01"})
    assert (response.status_code, response.json()["error"]) == (404, "not_found")


def test_routes_by_id_still_answer_beside_the_scan_routes(client, ticket):
    """`tickets/checkin` and `tickets/renew` sit beside `tickets/{t}/...` and `tickets/search`."""
    assert client.post(checkin_url(ticket)).status_code == 200
    assert client.post(renew_url(ticket)).status_code == 200
    search = client.get(f"{tickets_url(ticket.event)}/search", {"reference_code": "gate0001"})
    assert search.status_code == 200
    assert client.get(scan_checkin_url(ticket.event)).status_code == 405


# --- PostgreSQL: the one statement, its plan, its cost, and races -------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("key", ["reference_code", "nfc_uid"])
def test_scan_is_admitted_by_the_one_statement(monkeypatch, client, event, key):
    ticket = TicketFactory(event=event, reference_code="STMT0001", nfc_uid="04STMT")

    def locked_service_not_expected(**kwargs):
        raise AssertionError("the admission statement should have answered")

    monkeypatch.setattr(gate, "ticket_check_in", locked_service_not_expected)
    value = {"reference_code": " stmt0001 ", "nfc_uid": "04STMT"}[key]
    response = client.post(scan_checkin_url(event), {key: value}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["ticket"]["id"] == ticket.id
    assert _audit(ticket)[0]["nfc_uid"] == ("04STMT" if key == "nfc_uid" else None)


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("column", "indexes"),
    [
        ("reference_code", {"ticket_unique_reference_code"}),
        ("nfc_uid", {"ticket_unique_nfc_uid"}),
        ("id", {"tickets_ticket_pkey", "ticket_event_id_idx"}),  # (event, id) is as exact
    ],
)
@pytest.mark.parametrize("statement", ["simple", "typed"])
def test_admission_statement_finds_the_ticket_through_the_unique_index(
    ticket, column, indexes, statement
):
    """With the event's tickets many, the statement reaches the one row by its key's index,
    in the branch that admits and in the one that tells a refusal."""
    Ticket.objects.bulk_create(
        Ticket(
            event_id=ticket.event_id,
            order_id=ticket.order_id,
            ticket_type_id=ticket.ticket_type_id,
            reference_code=f"BULK{n:06d}",
            nfc_uid=f"04{n:06d}",
        )
        for n in range(2000)
    )
    params = {
        "key": {"reference_code": "GATE0001", "nfc_uid": "04000007", "id": ticket.id}[column],
        "nfc_uid": None,
        "event_id": ticket.event_id,
        "organizer_id": ticket.event.organizer_id,
        "at": "2026-01-10T08:15:00Z",
        "now": "2026-01-10T08:15:00Z",
        "user_id": None,
        "application_id": None,
        "note": "",
        "scan_id": None,
    }
    params["type_ids"] = [1]
    table = Ticket._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")
        sql = admission.admit_sql(column, typed=statement == "typed")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # Every read of the ticket (found, admitted, locked) goes through an index, the key's.
    assert re.search(rf"Seq Scan on {table} t\b", plan) is None, plan
    used = set(re.findall(rf"Index (?:Only )?Scan using (\w+) on {table} t ", plan))
    used |= set(re.findall(r"Bitmap Index Scan on (\w+)", plan))
    assert used & indexes, plan
    assert used <= indexes | {"tickets_ticket_pkey"}, plan


@pytest.mark.parametrize("publish", [False, True])
@pytest.mark.parametrize(
    ("column", "guarded"),
    [("reference_code", False), ("nfc_uid", False), ("id", False), ("id", True)],
)
def test_the_simple_scans_statement_is_short_enough_for_psycopg_to_keep_its_conversion(
    column, guarded, publish
):
    """psycopg converts a query's named placeholders once per text of up to 4 KB and keeps the
    result; a longer text is converted anew on every execution (about 0.1 ms of the gate's
    commonest scan). `guarded`: a signed code's scan (by id, with the signed reference code)."""
    sql = admission.admit_sql(column, publish=publish, guarded=guarded)
    assert len(sql.encode()) <= 4096


_CONTROL = {"BEGIN", "COMMIT", "ROLLBACK"}  # what Django logs of transaction control


@contextmanager
def round_trips():
    """Every statement that reaches the database on this connection, transaction control
    included: the executes (counted below Django's query log) plus BEGIN/COMMIT/ROLLBACK."""
    sent: list[str] = []

    def count(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as logged, connection.execute_wrapper(count):
        yield sent
    sent.extend(q["sql"] for q in logged.captured_queries if q["sql"] in _CONTROL)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("token", ["user_token", "app_token"])
def test_scan_by_code_with_a_cached_token_costs_one_round_trip(request, event, token):
    first, second = TicketFactory.create_batch(2, event=event)
    client = client_for(request.getfixturevalue(token))
    assert client.post(scan_checkin_url(event), {"ticket_id": first.id}).status_code == 200
    with round_trips() as sent:
        response = client.post(
            scan_checkin_url(event), {"reference_code": second.reference_code.lower()}
        )
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "used"
    # Only the admission: the token cache kept the token and its user's role in the organizer
    # (an application token on its own organizer's path needs no organizer statement at all).
    assert len(sent) == 1, "\n".join(sent)
    assert sent[0].lstrip().startswith("WITH"), sent[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("token", ["user_token", "app_token"])
@pytest.mark.parametrize("type_count", [1, 2])
def test_multi_type_scan_with_a_cached_token_costs_one_round_trip(
    request, event, token, type_count
):
    types = [CheckInTypeFactory(event=event).id for _ in range(type_count)]
    first, second = TicketFactory.create_batch(2, event=event)
    client = client_for(request.getfixturevalue(token))
    body = {"check_in_type_ids": types}
    assert client.post(scan_checkin_url(event), {"ticket_id": first.id, **body}).status_code == 200
    with round_trips() as sent:
        response = client.post(
            scan_checkin_url(event), {"reference_code": second.reference_code, **body}
        )
    assert response.status_code == 200
    assert [r["success"] for r in response.json()["check_in_results"]] == [True] * type_count
    assert response.json()["ticket"]["status"] == "used"
    assert len(sent) == 1, "\n".join(sent)
    assert TicketCheckIn.objects.filter(ticket=second).count() == type_count


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("refusal", "status", "error", "typed"),
    [
        ("used", 422, "ticket_already_used", False),
        ("types_required", 422, "check_in_type_required", False),
        *(
            (refusal, status, error, typed)
            for refusal, status, error in (
                ("revoked", 422, "ticket_revoked"),
                ("unpaid", 422, "order_not_paid"),
                ("unknown", 404, "not_found"),
            )
            for typed in (False, True)
        ),
    ],
)
def test_a_refusal_costs_the_round_trip_of_an_admission_and_shows_the_ticket(
    app_token, event, refusal, status, error, typed
):
    """Refused by the admission statement itself, which read every rule's verdict when it
    found nothing to admit: one statement, no transaction, nothing written."""
    body = {"check_in_type_ids": [CheckInTypeFactory(event=event).id]} if typed else {}
    if refusal == "types_required":
        CheckInTypeFactory(event=event)
    order = OrderFactory(event=event, status="pending" if refusal == "unpaid" else "paid")
    ticket_status = {"used": "used", "revoked": "revoked"}.get(refusal, "active")
    ticket = TicketFactory(event=event, order=order, status=ticket_status)
    code = "NOSUCH01" if refusal == "unknown" else ticket.reference_code
    client = client_for(app_token)
    client.post(scan_checkin_url(event), {"reference_code": "WARMUP01"})  # caches the token
    before = db_state(event)
    with round_trips() as sent:
        response = client.post(scan_checkin_url(event), {"reference_code": code, **body})
    assert (response.status_code, response.json()["error"]) == (status, error)
    assert len(sent) == 1, "\n".join(sent)
    if refusal != "unknown":
        assert response.json()["ticket"]["id"] == ticket.id
        assert response.json()["ticket"]["status"] == ticket_status
    assert db_state(event) == before


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("key", ["reference_code", "nfc_uid"])
@pytest.mark.parametrize("multiple", [False, True], ids=["simple", "multiple"])
def test_race_two_scans_of_one_code_admit_exactly_one(user_token, event, key, multiple):
    """Two gates scan the same ticket at once: one statement (simple mode) or the row lock
    taken by the key (multiple mode) lets exactly one through."""
    types = [CheckInTypeFactory(event=event).id] if multiple else None
    ticket = TicketFactory(event=event, reference_code="RACE0001", nfc_uid="04RACE")
    body = {key: {"reference_code": "race0001", "nfc_uid": "04RACE"}[key]}
    if types:
        body["check_in_type_ids"] = types

    results = run_at_once(
        2,
        lambda i: client_for(user_token).post(scan_checkin_url(event), body, format="json"),
    )

    statuses = sorted(status for status, _ in results)
    if multiple:  # 200 both times; exactly one admits the type
        assert statuses == [200, 200]
        assert sorted(b["check_in_results"][0]["success"] for _, b in results) == [False, True]
    else:
        assert statuses == [200, 422]
        assert [b["error"] for s, b in results if s == 422] == ["ticket_already_used"]
    assert CheckInLog.objects.filter(ticket=ticket).count() == 1

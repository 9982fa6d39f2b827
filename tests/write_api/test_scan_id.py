"""Retry-safe scans (CONTRACT §7): a check-in or renew with a `scan_id` is applied once per event;
a repeat, online or in a batch upload (§11), either way round, replays the first answer."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from checkin.models import CheckInLog, ScanRecord
from checkin.services import statements as admission
from checkin.statements import scan_claim, scan_claim_orm
from events.models import TicketType
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    FormFieldFactory,
    TicketFactory,
    TicketTypeFactory,
    WebhookEndpointFactory,
)
from tests.scanner.concurrency import in_thread, wait_until_waiting_on_locks
from tests.scanner.helpers import batch_url
from tickets.exceptions import ticket_body
from tickets.models import Ticket, TicketFormAnswer
from tickets.selectors import ticket_for_output
from webhooks.models import WebhookEvent

from .helpers import checkin_url, client_for, db_state, renew_url, tickets_url
from .test_races import run_at_once
from .test_scan_by_code import round_trips

pytestmark = pytest.mark.django_db

AT = "2026-01-10T19:30:00+07:00"


def _checked_in_an_hour_ago(ticket) -> None:
    Ticket.objects.filter(pk=ticket.pk).update(
        status="used", used_at=timezone.now() - timedelta(hours=1)
    )


@pytest.fixture
def client(user_token):
    return client_for(user_token)


def everything(event) -> dict:
    """What a scan could change: the gate's rows, the scan records, the webhook events."""
    return {
        **db_state(event),
        "records": list(ScanRecord.objects.filter(event=event).order_by("pk").values()),
        "webhook_events": WebhookEvent.objects.count(),
    }


def gate(client, ticket, operation: str, by: str, **body):
    """A check-in or renew of `ticket`, by its id in the path or by its code."""
    if by == "id":
        url = (checkin_url if operation == "checkin" else renew_url)(ticket)
    else:
        url = f"{tickets_url(ticket.event)}/{operation}"
        body["reference_code"] = ticket.reference_code
    return client.post(url, body, format="json")


def upload(client, event, *scans) -> dict:
    response = client.post(batch_url(event), {"scans": list(scans)}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.parametrize("by", ["id", "code"])
@pytest.mark.parametrize("operation", ["checkin", "renew"])
def test_scan_id_online_replay_returns_the_first_answer_and_writes_nothing(
    client, event, ticket, operation, by
):
    WebhookEndpointFactory(organizer=event.organizer)
    if operation == "renew":
        _checked_in_an_hour_ago(ticket)
    first = gate(client, ticket, operation, by, scan_id="gate-1-0001", note="north")
    assert first.status_code == 200, first.json()
    assert "replayed" not in first.json()
    before = everything(event)
    assert CheckInLog.objects.filter(ticket=ticket, scan_id="gate-1-0001").count() == 1

    again = gate(client, ticket, operation, by, scan_id="gate-1-0001", note="north")

    assert again.status_code == 200
    assert again.json() == {**first.json(), "replayed": True}
    assert everything(event) == before


def _renewed(client, ticket):
    assert gate(client, ticket, "renew", "id").status_code == 200


def _holder_renamed(client, ticket):
    Ticket.objects.filter(pk=ticket.pk).update(firstname="Somchai", lastname="Renamed")


def _type_changed(client, ticket):
    TicketType.objects.filter(pk=ticket.ticket_type_id).update(name="Renamed", price=99)


def _moved_to_another_type(client, ticket):
    other = TicketTypeFactory(event=ticket.event, name="VIP", price=500000)
    Ticket.objects.filter(pk=ticket.pk).update(ticket_type=other)


@pytest.mark.postgres
@pytest.mark.parametrize("answered", [False, True], ids=["no answers", "form answers"])
@pytest.mark.parametrize("by", ["id", "code"])
@pytest.mark.parametrize(
    "change", [_renewed, _holder_renamed, _type_changed, _moved_to_another_type]
)
def test_scan_id_replay_of_the_statements_admission_is_its_first_answer_after_a_change(
    client, event, ticket, by, change, answered
):
    """The one statement's admission (no check-in types) keeps the image of the ticket's row
    its answer was rendered from: a replay renders that image, byte for byte the first answer,
    whatever changed the ticket or its type since; and admits nothing again."""
    if answered:
        question = FormFieldFactory(event=event, label="Shirt size")
        TicketFormAnswer.objects.create(ticket=ticket, field=question, value="L")
    first = gate(client, ticket, "checkin", by, scan_id="img-scan-01")
    assert first.status_code == 200, first.json()
    assert first.json()["ticket"]["status"] == "used"
    assert len(first.json()["ticket"]["forms"]) == answered
    change(client, ticket)
    changed = Ticket.objects.get(pk=ticket.pk)
    admitted = CheckInLog.objects.filter(ticket=ticket, action="check_in").count()

    again = gate(client, ticket, "checkin", by, scan_id="img-scan-01")

    assert again.status_code == 200
    assert again.json() == {**first.json(), "replayed": True}
    assert again.content == first.content[:-1] + b',"replayed":true}'
    assert CheckInLog.objects.filter(ticket=ticket, action="check_in").count() == admitted == 1
    now = Ticket.objects.get(pk=ticket.pk)
    assert (now.status, now.used_at, now.updated_at) == (
        changed.status,
        changed.used_at,
        changed.updated_at,
    )
    record = ScanRecord.objects.get(scan_id="img-scan-01")
    assert record.result["ticket_row"]["id"] == ticket.id  # the statement's image


def test_scan_id_record_of_the_statement_without_an_image_replays_with_the_ticket_now(
    client, event, ticket
):
    """A record the statement wrote before it kept the image (the decision alone) still
    replays: the decision, with the ticket as it stands."""
    _checked_in_an_hour_ago(ticket)
    ScanRecord.objects.create(
        event=event,
        scan_id="old-scan-01",
        ticket=ticket,
        action="check_in",
        success=True,
        result={},
        status_code=200,
    )
    shown = ticket_body(ticket_for_output(id=ticket.id))

    again = gate(client, ticket, "checkin", "id", scan_id="old-scan-01")

    assert again.status_code == 200
    assert again.json() == {
        "success": True,
        "ticket": shown,
        "check_in_results": [],
        "renew_results": [],
        "replayed": True,
    }
    assert CheckInLog.objects.filter(ticket=ticket).count() == 0


def test_gate_answer_without_a_retry_id_has_no_replayed_key(client, event, ticket):
    first = gate(client, ticket, "checkin", "id")
    again = gate(client, ticket, "checkin", "id")
    assert first.status_code == 200 and "replayed" not in first.json()
    assert again.status_code == 422 and "replayed" not in again.json()
    assert ScanRecord.objects.count() == 0


def test_scan_id_rejected_scan_replays_its_rejection(client, event, ticket):
    _checked_in_an_hour_ago(ticket)
    first = gate(client, ticket, "checkin", "code", scan_id="gate-1-0002")
    assert (first.status_code, first.json()["error"]) == (422, "ticket_already_used")
    # Renewed meanwhile: without the scan id a check-in would now pass.
    assert gate(client, ticket, "renew", "id").status_code == 200
    before = everything(event)

    again = gate(client, ticket, "checkin", "code", scan_id="gate-1-0002")

    assert again.status_code == 422
    assert again.json() == {**first.json(), "replayed": True}
    assert everything(event) == before
    assert Ticket.objects.get(pk=ticket.pk).status == "active"


def test_scan_id_unknown_ticket_replays_its_404(client, event):
    url = f"{tickets_url(event)}/checkin"
    first = client.post(url, {"reference_code": "NOSUCH01", "scan_id": "gate-1-0404"})
    TicketFactory(event=event, reference_code="NOSUCH01")
    again = client.post(url, {"reference_code": "NOSUCH01", "scan_id": "gate-1-0404"})
    assert (first.status_code, again.status_code) == (404, 404)
    assert again.json() == {**first.json(), "replayed": True}
    assert Ticket.objects.get(reference_code="NOSUCH01").status == "active"


def test_scan_id_online_then_batch_replays_in_the_upload(client, event, ticket):
    first = gate(client, ticket, "checkin", "id", scan_id="gate-1-0003")
    assert first.status_code == 200
    before = everything(event)

    body = upload(client, event, {"id": "gate-1-0003", "ticket_id": ticket.id, "used_at": AT})

    [result] = body["results"]
    assert result["replayed"] is True
    assert (result["success"], result["error"]) == (True, None)
    assert result["message"] == f"Ticket {ticket.reference_code} checked in."
    assert result["ticket"]["status"] == "used"
    assert result["ticket"]["id"] == ticket.id
    assert everything(event) == before


def test_scan_id_online_rejection_then_batch_replays_the_rejection(client, event, ticket):
    Ticket.objects.filter(pk=ticket.pk).update(status="revoked")
    first = gate(client, ticket, "checkin", "id", scan_id="gate-1-0004")
    assert first.status_code == 422
    body = upload(client, event, {"id": "gate-1-0004", "ticket_id": ticket.id, "used_at": AT})
    [result] = body["results"]
    assert (result["replayed"], result["success"]) == (True, False)
    assert (result["error"], result["message"]) == ("ticket_revoked", first.json()["message"])


def test_scan_id_batch_then_online_replays_the_upload(client, event, ticket):
    upload(client, event, {"id": "gate-1-0005", "ticket_id": ticket.id, "used_at": AT})
    before = everything(event)

    again = gate(client, ticket, "checkin", "code", scan_id="gate-1-0005")

    assert again.status_code == 200
    body = again.json()
    assert body["replayed"] is True
    assert (body["success"], body["check_in_results"], body["renew_results"]) == (True, [], [])
    assert body["ticket"]["id"] == ticket.id and body["ticket"]["status"] == "used"
    assert everything(event) == before


def test_scan_id_batch_rejection_then_online_replays_its_status(client, event, ticket):
    _checked_in_an_hour_ago(ticket)
    [result] = upload(client, event, {"id": "gate-1-0006", "ticket_id": ticket.id, "used_at": AT})[
        "results"
    ]
    Ticket.objects.filter(pk=ticket.pk).update(status="active", used_at=None)

    again = gate(client, ticket, "checkin", "id", scan_id="gate-1-0006")

    assert again.status_code == 422
    assert again.json()["error"] == "ticket_already_used"
    assert again.json()["message"] == result["message"]
    assert again.json()["replayed"] is True
    assert Ticket.objects.get(pk=ticket.pk).status == "active"


def test_scan_id_with_check_in_types_replays_each_types_result(client, event, ticket):
    door = CheckInTypeFactory(event=event).id
    first = gate(client, ticket, "checkin", "id", scan_id="gate-1-0007", check_in_type_ids=[door])
    assert first.json()["check_in_results"][0]["success"] is True
    again = gate(client, ticket, "checkin", "id", scan_id="gate-1-0007", check_in_type_ids=[door])
    assert again.json() == {**first.json(), "replayed": True}
    [result] = upload(
        client,
        event,
        {"id": "gate-1-0007", "ticket_id": ticket.id, "used_at": AT, "check_in_type_ids": [door]},
    )["results"]
    assert result["check_in_results"] == first.json()["check_in_results"]
    assert result["ticket"]["checked_in_type_ids"] == [door]


@pytest.mark.parametrize(
    "scan_id",
    ["short", "has space-01", "a" * 65, "ümlaut-0001", " padded-01 ", "", None, 12345678, ["x"]],
)
@pytest.mark.parametrize("by", ["id", "code"])
def test_scan_id_malformed_is_a_400(client, event, ticket, scan_id, by):
    before = everything(event)
    response = gate(client, ticket, "checkin", by, scan_id=scan_id)
    assert response.status_code == 400, response.json()
    assert response.json()["error"] == "invalid_parameters"
    assert "scan_id" in response.json()["fields"]
    assert everything(event) == before


def test_scan_id_of_another_event_is_independent(client, event, ticket, organizer):
    other = EventFactory(organizer=organizer)
    elsewhere = TicketFactory(event=other)
    assert gate(client, ticket, "checkin", "id", scan_id="gate-1-0008").status_code == 200

    response = gate(client, elsewhere, "checkin", "id", scan_id="gate-1-0008")

    assert response.status_code == 200
    assert "replayed" not in response.json()
    assert Ticket.objects.get(pk=elsewhere.pk).status == "used"
    assert ScanRecord.objects.filter(scan_id="gate-1-0008").count() == 2


def test_retry_id_in_another_organizers_event_is_a_404_and_claims_nothing(
    client, ticket, other_organizer
):
    foreign = TicketFactory(event=EventFactory(organizer=other_organizer))
    url = f"/api/public/organizers/{ticket.event.organizer_id}/events/{foreign.event_id}"
    response = client.post(f"{url}/tickets/{foreign.id}/checkin", {"scan_id": "gate-1-0009"})
    assert (response.status_code, response.json()["error"]) == (404, "not_found")
    assert ScanRecord.objects.count() == 0


@pytest.mark.parametrize("taken", [False, True])
@pytest.mark.parametrize("owned", [True, False])
def test_scan_id_claim_statement_matches_its_orm_twin(event, other_organizer, taken, owned):
    if taken:
        ScanRecord.objects.create(event=event, scan_id="gate-1-0010", success=True, result={})
    organizer_id = event.organizer_id if owned else other_organizer.id
    outcomes = []
    for claim in (scan_claim, scan_claim_orm):
        record = ScanRecord(event=event, scan_id="gate-1-0010", success=False, result={})
        claimed = claim(organizer_id=organizer_id, record=record)
        outcomes.append(claimed is not None)
        ScanRecord.objects.filter(pk=claimed).delete()
    assert outcomes[0] == outcomes[1] == (owned and not taken)


# --- PostgreSQL: races and round trips ----------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("by", ["id", "code"])
@pytest.mark.parametrize("operation", ["checkin", "renew"])
def test_scan_id_race_applies_exactly_one(user_token, event, ticket, operation, by):
    """Parallel requests with one scan id, each on its own connection: one applies, the others
    wait for its commit and replay its answer."""
    if operation == "renew":
        _checked_in_an_hour_ago(ticket)

    results = run_at_once(
        8, lambda i: gate(client_for(user_token), ticket, operation, by, scan_id="race-scan-01")
    )

    assert [status for status, _ in results] == [200] * 8
    fresh = [body for _, body in results if "replayed" not in body]
    assert len(fresh) == 1
    assert all(body == {**fresh[0], "replayed": True} for _, body in results if body != fresh[0])
    assert CheckInLog.objects.filter(ticket=ticket).count() == 1
    assert ScanRecord.objects.filter(scan_id="race-scan-01").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_scan_id_second_request_waits_for_the_first_and_replays_it(user_token, event, ticket):
    """Deterministic: the first request has claimed the scan id and waits on the ticket, which
    the test holds locked; the second waits on the first one's claim. Once released, the first
    applies and the second replays its answer."""

    def request():
        return gate(client_for(user_token), ticket, "checkin", "code", scan_id="wait-scan-1")

    with transaction.atomic():
        Ticket.objects.select_for_update().get(pk=ticket.pk)
        first, first_out = in_thread(request)
        wait_until_waiting_on_locks(1, [first])
        second, second_out = in_thread(request)
        wait_until_waiting_on_locks(2, [first, second])
    for thread in (first, second):
        thread.join(timeout=60)

    [applied], [replayed] = first_out, second_out
    assert applied.status_code == replayed.status_code == 200
    assert "replayed" not in applied.json()
    assert replayed.json() == {**applied.json(), "replayed": True}
    assert CheckInLog.objects.filter(ticket=ticket).count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_scan_id_taken_while_the_statement_admits_undoes_its_admission(user_token, event, ticket):
    """Deterministic: the one statement has admitted the ticket and waits to record the scan id,
    which the test holds claimed; once the test's claim commits, the statement's unique
    violation undoes the admission with it, and the request replays the test's answer."""
    first_answer = {"success": False, "error": "ticket_revoked", "message": "Ticket revoked."}
    with transaction.atomic():
        ScanRecord.objects.create(
            event=event, scan_id="undo-scan-1", success=False, result=first_answer, status_code=422
        )
        thread, out = in_thread(
            lambda: gate(client_for(user_token), ticket, "checkin", "id", scan_id="undo-scan-1")
        )
        wait_until_waiting_on_locks(1, [thread])
    thread.join(timeout=60)

    [response] = out
    assert (response.status_code, response.json()) == (422, {**first_answer, "replayed": True})
    assert Ticket.objects.get(pk=ticket.pk).status == "active"
    assert not CheckInLog.objects.filter(ticket=ticket).exists()
    assert ScanRecord.objects.filter(scan_id="undo-scan-1").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_scan_id_race_between_online_and_upload_applies_exactly_one(user_token, event, ticket):
    barrier = threading.Barrier(2)
    out: dict = {}

    def online():
        try:
            barrier.wait(timeout=30)
            out["online"] = gate(
                client_for(user_token), ticket, "checkin", "id", scan_id="race-scan-02"
            )
        finally:
            connection.close()

    def batch():
        try:
            barrier.wait(timeout=30)
            scan = {"id": "race-scan-02", "ticket_id": ticket.id, "used_at": AT}
            out["batch"] = client_for(user_token).post(
                batch_url(event), {"scans": [scan]}, format="json"
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=f) for f in (online, batch)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    online_body = out["online"].json()
    [result] = out["batch"].json()["results"]
    assert out["online"].status_code == 200, online_body
    assert result["success"] is True and result["error"] is None
    assert [online_body.get("replayed", False), result["replayed"]] in (
        [True, False],
        [False, True],
    )
    assert CheckInLog.objects.filter(ticket=ticket).count() == 1
    assert ScanRecord.objects.filter(scan_id="race-scan-02").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_scan_id_round_trips_are_pinned(user_token, event):
    """With a scan id, as without one
    (`test_scan_by_code_with_a_cached_token_costs_one_round_trip`): the admission statement
    alone, which records the decision under the scan id, in autocommit. A replay: the statement
    (the id taken), then the record, whose image of the ticket renders the body (its form
    answers too, if it had some). A refusal: the statement, then the claim that stores the
    answer."""
    first, second = TicketFactory.create_batch(2, event=event)
    client = client_for(user_token)
    url = f"{tickets_url(event)}/checkin"
    assert client.post(url, {"ticket_id": first.id}).status_code == 200  # caches the token

    with round_trips() as sent:
        response = client.post(
            url, {"reference_code": second.reference_code, "scan_id": "rt-00001"}
        )
    assert response.status_code == 200
    assert len(sent) == 1, "\n".join(sent)
    assert sent[0].lstrip().startswith("WITH")  # the admission, with the scan's record
    assert ScanRecord.objects.get(scan_id="rt-00001").ticket_id == second.id

    with round_trips() as sent:
        response = client.post(
            url, {"reference_code": second.reference_code, "scan_id": "rt-00001"}
        )
    assert response.json()["replayed"] is True
    assert len(sent) == 2, "\n".join(sent)

    with round_trips() as sent:  # a refusal: the statement, then the claim with the answer
        response = client.post(
            url, {"reference_code": second.reference_code, "scan_id": "rt-00002"}
        )
    assert (response.status_code, response.json()["error"]) == (422, "ticket_already_used")
    assert len(sent) == 2, "\n".join(sent)
    assert ScanRecord.objects.get(scan_id="rt-00002").status_code == 422


@pytest.mark.parametrize("publish", [False, True])
@pytest.mark.parametrize(
    ("column", "guarded"),
    [("reference_code", False), ("nfc_uid", False), ("id", False), ("id", True)],
)
def test_scan_id_statement_is_short_enough_for_psycopg_to_keep_its_conversion(
    column, guarded, publish
):
    """As the statement without a scan id
    (`test_the_simple_scans_statement_is_short_enough_for_psycopg_to_keep_its_conversion`): a
    text over 4 KB is converted anew on every execution, a quarter of a millisecond."""
    sql = admission.admit_sql(column, publish=publish, guarded=guarded, scan=True)
    assert len(sql.encode()) <= 4096


def test_scan_id_and_replayed_are_in_the_openapi_document(api_client):
    document = api_client.get("/api/public/schema/", HTTP_ACCEPT="application/json").json()
    schemas = document["components"]["schemas"]
    inputs = ["CheckInInputRequest", "RenewInputRequest"]
    for name in [*inputs, "ScanCheckInInputRequest", "ScanRenewInputRequest"]:
        assert schemas[name]["properties"]["scan_id"]["pattern"] == "^[A-Za-z0-9_-]{8,64}$"
        assert "scan_id" not in schemas[name].get("required", [])
    assert schemas["GateResult"]["properties"]["replayed"]["type"] == "boolean"
    assert "replayed" not in schemas["GateResult"]["required"]
    for error in ("NotFoundError", "ConflictError", "UnprocessableError"):
        assert schemas[error]["properties"]["replayed"]["type"] == "boolean"

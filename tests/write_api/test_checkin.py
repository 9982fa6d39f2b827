"""POST .../tickets/{t}/checkin: simple and multiple modes, rejections, NFC, audit (CONTRACT §7)."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from checkin.models import CheckInLog, TicketCheckIn
from events.models import Event
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tickets.models import Order, Ticket

from .helpers import checkin_url, client_for, db_state

pytestmark = pytest.mark.django_db


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value)


@pytest.fixture
def client(user_token):
    return client_for(user_token)


# --- Simple mode ----------------------------------------------------------------------------


def test_ticket_check_in_simple_marks_used_and_writes_one_audit_row(
    client, ticket, member, application
):
    before = timezone.now()
    response = client.post(checkin_url(ticket), {"note": "north gate"})

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True
    assert body["check_in_results"] == []
    assert body["renew_results"] == []
    assert body["ticket"]["id"] == ticket.id
    assert body["ticket"]["status"] == "used"
    assert body["ticket"]["used_at"].endswith("+07:00")
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    assert before <= ticket.used_at <= timezone.now()
    assert parse(body["ticket"]["used_at"]) == ticket.used_at
    log = CheckInLog.objects.get()
    assert (log.ticket_id, log.action, log.check_in_type_id) == (ticket.id, "check_in", None)
    assert (log.actor_user_id, log.actor_application_id) == (member.id, application.id)
    assert (log.at, log.note, log.nfc_uid) == (ticket.used_at, "north gate", None)


def test_ticket_check_in_with_application_token_records_only_the_application(
    app_token, ticket, application
):
    response = client_for(app_token).post(checkin_url(ticket))
    assert response.status_code == 200
    log = CheckInLog.objects.get()
    assert (log.actor_user_id, log.actor_application_id) == (None, application.id)


def test_ticket_check_in_used_at_in_the_past_is_kept(client, ticket):
    response = client.post(checkin_url(ticket), {"used_at": "2026-01-10T08:15:00Z"}, format="json")
    assert response.status_code == 200
    assert response.json()["ticket"]["used_at"] == "2026-01-10T15:15:00+07:00"
    ticket.refresh_from_db()
    assert ticket.used_at == datetime.fromisoformat("2026-01-10T08:15:00+00:00")
    assert CheckInLog.objects.get().at == ticket.used_at


def test_ticket_check_in_naive_used_at_is_read_in_the_site_zone(client, ticket):
    response = client.post(checkin_url(ticket), {"used_at": "2026-01-10T19:30:00"})
    assert response.status_code == 200
    ticket.refresh_from_db()
    assert ticket.used_at == datetime.fromisoformat("2026-01-10T19:30:00+07:00")


def test_ticket_check_in_used_at_a_few_minutes_ahead_is_accepted(client, ticket):
    soon = (timezone.now() + timedelta(minutes=4)).isoformat()
    assert client.post(checkin_url(ticket), {"used_at": soon}).status_code == 200


@pytest.mark.parametrize(
    "used_at",
    [
        "future",
        "yesterday-ish",
        "2026-13-01T00:00:00Z",
        "9999-12-31T23:59:59-12:00",
        "0212-05-22T02:21:49.53-04:42",  # a reset scanner clock, found by schemathesis
        "1999-12-31T23:59:59Z",
    ],
)
def test_ticket_check_in_bad_used_at_is_400_and_changes_nothing(client, ticket, used_at):
    if used_at == "future":
        used_at = (timezone.now() + timedelta(minutes=6)).isoformat()
    before = db_state(ticket.event)
    response = client.post(checkin_url(ticket), {"used_at": used_at})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"
    assert list(response.json()["fields"]) == ["used_at"]
    assert db_state(ticket.event) == before


def test_ticket_check_in_twice_is_422_already_used_with_the_ticket(client, ticket):
    first = client.post(checkin_url(ticket), {"used_at": "2026-01-10T12:30:00Z"}, format="json")
    assert first.status_code == 200
    before = db_state(ticket.event)

    response = client.post(checkin_url(ticket))

    assert response.status_code == 422
    body = response.json()
    assert body["success"] is False
    assert body["error"] == "ticket_already_used"
    assert body["message"] == "Ticket GATE0001 was checked in at 2026-01-10T19:30:00+07:00."
    assert body["ticket"] == first.json()["ticket"]
    assert db_state(ticket.event) == before


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("revoked", "ticket_revoked"),
        ("pending_order", "order_not_paid"),
        ("cancelled_order", "order_not_paid"),
        ("draft_event", "event_not_active"),
    ],
)
def test_ticket_check_in_ticket_level_rejections_change_nothing(client, organizer, setup, code):
    event = EventFactory(
        organizer=organizer,
        status=Event.Status.DRAFT if setup == "draft_event" else Event.Status.ACTIVE,
    )
    order_status = {"pending_order": "pending", "cancelled_order": "cancelled"}.get(setup, "paid")
    order = OrderFactory(event=event, status=order_status)
    ticket = TicketFactory(
        event=event,
        order=order,
        status=Ticket.Status.REVOKED if setup == "revoked" else Ticket.Status.ACTIVE,
    )
    before = db_state(event)

    response = client.post(checkin_url(ticket), {"nfc_uid": "04AABB"})

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == code
    assert body["ticket"]["id"] == ticket.id
    assert body["ticket"]["status"] == ticket.status
    assert db_state(event) == before


def test_ticket_check_in_after_the_event_ended_is_allowed(client, organizer):
    # Offline scanners sync after the show; only a draft event refuses check-ins.
    event = EventFactory(
        organizer=organizer,
        start_at=timezone.now() - timedelta(days=1, hours=5),
        end_at=timezone.now() - timedelta(days=1),
    )
    ticket = TicketFactory(event=event)
    assert client.post(checkin_url(ticket)).status_code == 200


def test_ticket_check_in_ticket_of_another_event_is_404(client, event, organizer):
    other = TicketFactory(event=EventFactory(organizer=organizer))
    before = db_state(other.event)
    response = client.post(
        f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets/{other.id}/checkin"
    )
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert db_state(other.event) == before


def test_ticket_check_in_event_of_another_organizer_is_404(client, organizer, other_organizer):
    """The path's organizer is the caller's; the event (and ticket) belong to someone else."""
    foreign = TicketFactory(event=EventFactory(organizer=other_organizer))
    response = client.post(
        f"/api/public/organizers/{organizer.id}/events/{foreign.event_id}"
        f"/tickets/{foreign.id}/checkin"
    )
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert Ticket.objects.get(pk=foreign.pk).status == Ticket.Status.ACTIVE
    assert not CheckInLog.objects.exists()


def test_ticket_check_in_unknown_event_is_404_even_with_a_bad_body(client, organizer):
    response = client.post(
        f"/api/public/organizers/{organizer.id}/events/2147483647/tickets/1/checkin",
        {"used_at": "not a time"},
    )
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_ticket_check_in_of_another_organizers_ticket_is_hidden(app_token, ticket, other_organizer):
    event = EventFactory(organizer=other_organizer)
    foreign = TicketFactory(event=event)
    response = client_for(app_token).post(checkin_url(foreign))
    assert response.status_code == 403
    assert response.json()["error"] == "application_not_owned"
    assert Ticket.objects.get(pk=foreign.pk).status == "active"


def test_ticket_check_in_unknown_ticket_is_404(client, event):
    response = client.post(
        f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets/2147483647/checkin"
    )
    assert response.status_code == 404


def test_ticket_check_in_buyer_token_is_403(buyer_client, ticket):
    response = buyer_client.post(checkin_url(ticket))
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert Ticket.objects.get(pk=ticket.pk).status == "active"


def test_ticket_check_in_get_is_405(client, ticket):
    response = client.get(checkin_url(ticket))
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


# --- NFC ------------------------------------------------------------------------------------


def test_ticket_check_in_binds_the_nfc_tag(client, ticket):
    response = client.post(checkin_url(ticket), {"nfc_uid": " 04A1B2C3 "})
    assert response.status_code == 200
    ticket.refresh_from_db()
    assert ticket.nfc_uid == "04A1B2C3"
    assert CheckInLog.objects.get().nfc_uid == "04A1B2C3"


def test_ticket_check_in_nfc_tag_of_another_ticket_is_409(client, ticket, event, ticket_type):
    TicketFactory(event=event, ticket_type=ticket_type, nfc_uid="04TAKEN")
    before = db_state(event)
    response = client.post(checkin_url(ticket), {"nfc_uid": "04TAKEN"})
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "duplicate_nfc_uid"
    assert body["ticket"]["id"] == ticket.id
    assert db_state(event) == before


def test_ticket_check_in_nfc_tag_used_in_another_event_is_fine(client, ticket, organizer):
    TicketFactory(event=EventFactory(organizer=organizer), nfc_uid="04SHARED")
    assert client.post(checkin_url(ticket), {"nfc_uid": "04SHARED"}).status_code == 200


def test_ticket_check_in_blank_nfc_uid_is_ignored(client, ticket):
    assert client.post(checkin_url(ticket), {"nfc_uid": ""}).status_code == 200
    ticket.refresh_from_db()
    assert ticket.nfc_uid is None


# --- Multiple check-in types -----------------------------------------------------------------


@pytest.fixture
def multi(event, ticket_type):
    """An event with day1, day2 and a VIP lounge that admits only the VIP type."""
    vip = TicketTypeFactory(event=event, name="VIP")
    day1 = CheckInTypeFactory(event=event, name="Day 1", position=1)
    day2 = CheckInTypeFactory(event=event, name="Day 2", position=2)
    lounge = CheckInTypeFactory(event=event, name="VIP lounge", position=3, ticket_types=[vip])
    return {"day1": day1, "day2": day2, "lounge": lounge, "vip": vip}


def test_ticket_check_in_multi_requires_types(client, ticket, multi):
    before = db_state(ticket.event)
    response = client.post(checkin_url(ticket))
    assert response.status_code == 422
    assert response.json()["error"] == "check_in_type_required"
    assert response.json()["ticket"]["id"] == ticket.id
    assert db_state(ticket.event) == before


def test_ticket_check_in_multi_empty_list_requires_types(client, ticket, multi):
    response = client.post(checkin_url(ticket), {"check_in_type_ids": []}, format="json")
    assert response.status_code == 422
    assert response.json()["error"] == "check_in_type_required"


def test_ticket_check_in_multi_results_follow_request_order(
    client, ticket, multi, member, organizer
):
    foreign_type = CheckInTypeFactory(event=EventFactory(organizer=organizer))
    at = "2026-03-01T10:00:00+07:00"
    ids = [
        multi["day2"].id,
        999999,
        multi["lounge"].id,
        multi["day1"].id,
        multi["day2"].id,
        foreign_type.id,
    ]

    response = client.post(
        checkin_url(ticket), {"check_in_type_ids": ids, "used_at": at}, format="json"
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is False  # some requested types failed
    assert body["renew_results"] == []
    assert body["check_in_results"] == [
        {
            "check_in_type_id": multi["day2"].id,
            "check_in_type_name": "Day 2",
            "used_at": at,
            "success": True,
            "error": None,
        },
        {
            "check_in_type_id": 999999,
            "check_in_type_name": None,
            "used_at": None,
            "success": False,
            "error": "Unknown check-in type",
        },
        {
            "check_in_type_id": multi["lounge"].id,
            "check_in_type_name": "VIP lounge",
            "used_at": None,
            "success": False,
            "error": "Not valid for this ticket type",
        },
        {
            "check_in_type_id": multi["day1"].id,
            "check_in_type_name": "Day 1",
            "used_at": at,
            "success": True,
            "error": None,
        },
        {
            "check_in_type_id": multi["day2"].id,
            "check_in_type_name": "Day 2",
            "used_at": at,
            "success": False,
            "error": f"Already checked in at {at}",
        },
        {
            "check_in_type_id": foreign_type.id,
            "check_in_type_name": None,
            "used_at": None,
            "success": False,
            "error": "Unknown check-in type",
        },
    ]
    assert body["ticket"]["status"] == "used"
    assert body["ticket"]["used_at"] == at
    assert sorted(TicketCheckIn.objects.values_list("check_in_type_id", flat=True)) == sorted(
        [multi["day1"].id, multi["day2"].id]
    )
    logs = CheckInLog.objects.order_by("check_in_type_id")
    assert [(log.check_in_type_id, log.action, log.actor_user_id) for log in logs] == sorted(
        [(multi["day1"].id, "check_in", member.id), (multi["day2"].id, "check_in", member.id)]
    )


def test_ticket_check_in_multi_all_succeed_is_success(client, ticket, multi):
    response = client.post(
        checkin_url(ticket), {"check_in_type_ids": f"{multi['day1'].id},{multi['day2'].id}"}
    )
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert [r["success"] for r in response.json()["check_in_results"]] == [True, True]


def test_ticket_check_in_multi_restricted_type_admits_its_ticket_type(client, event, multi):
    vip_ticket = TicketFactory(event=event, ticket_type=multi["vip"])
    response = client.post(
        checkin_url(vip_ticket), {"check_in_type_ids": [multi["lounge"].id]}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["check_in_results"][0]["success"] is True


def test_ticket_check_in_multi_used_at_is_the_earliest_admission(client, ticket, multi):
    later, earlier = "2026-03-02T18:00:00+07:00", "2026-03-01T18:00:00+07:00"
    client.post(
        checkin_url(ticket),
        {"check_in_type_ids": [multi["day2"].id], "used_at": later},
        format="json",
    )
    # An offline scanner syncs an earlier day-1 scan afterwards.
    response = client.post(
        checkin_url(ticket),
        {"check_in_type_ids": [multi["day1"].id], "used_at": earlier},
        format="json",
    )
    assert response.json()["ticket"]["used_at"] == earlier
    ticket.refresh_from_db()
    assert ticket.used_at == datetime.fromisoformat(earlier)


def test_ticket_check_in_multi_repeat_of_admitted_type_is_200_with_failed_result(
    client, ticket, multi
):
    client.post(checkin_url(ticket), {"check_in_type_ids": [multi["day1"].id]}, format="json")
    before = db_state(ticket.event)
    response = client.post(
        checkin_url(ticket), {"check_in_type_ids": [multi["day1"].id]}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["success"] is False
    assert response.json()["check_in_results"][0]["error"].startswith("Already checked in at ")
    assert db_state(ticket.event) == before


def test_ticket_check_in_multi_revoked_is_422_even_with_types(client, event, multi):
    ticket = TicketFactory(event=event, status=Ticket.Status.REVOKED)
    response = client.post(
        checkin_url(ticket), {"check_in_type_ids": [multi["day1"].id]}, format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"] == "ticket_revoked"
    assert TicketCheckIn.objects.count() == 0


def test_ticket_check_in_simple_mode_ignores_type_ids(client, ticket):
    response = client.post(checkin_url(ticket), {"check_in_type_ids": [1, 2]}, format="json")
    assert response.status_code == 200
    assert response.json()["check_in_results"] == []


def test_ticket_check_in_unpaid_order_in_multi_mode_is_422(client, event, multi):
    order = OrderFactory(event=event, status=Order.Status.PENDING)
    ticket = TicketFactory(event=event, order=order)
    response = client.post(
        checkin_url(ticket), {"check_in_type_ids": [multi["day1"].id]}, format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"] == "order_not_paid"

"""Renew (undo a check-in), invalidate (revoke) and order cancellation (CONTRACT §5, §7, §8)."""

from datetime import datetime

import pytest

from checkin.models import CheckInLog, TicketCheckIn
from checkin.services.gate import ticket_check_in
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from ticketing.api.exceptions import NotFound
from tickets.exceptions import TicketAlreadyUsed
from tickets.models import Order, Ticket
from tickets.services.common import Actor
from tickets.services.revoking import order_cancel, ticket_revoke

from .helpers import checkin_url, client_for, db_state, invalidate_url, renew_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(user_token):
    return client_for(user_token)


# --- Renew, simple mode ---------------------------------------------------------------------


def test_ticket_renew_simple_returns_the_ticket_to_active(client, ticket, member, application):
    client.post(checkin_url(ticket))
    response = client.post(renew_url(ticket), {"note": "scanned by mistake"})

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True
    assert (body["ticket"]["status"], body["ticket"]["used_at"]) == ("active", None)
    assert (body["check_in_results"], body["renew_results"]) == ([], [])
    ticket.refresh_from_db()
    assert (ticket.status, ticket.used_at) == ("active", None)
    log = CheckInLog.objects.get(action="renew")
    assert (log.actor_user_id, log.actor_application_id, log.note) == (
        member.id,
        application.id,
        "scanned by mistake",
    )
    # Checked in again after the renew: the gate admits it.
    assert client.post(checkin_url(ticket)).status_code == 200


def test_ticket_renew_of_an_unused_ticket_is_422(client, ticket):
    before = db_state(ticket.event)
    response = client.post(renew_url(ticket))
    assert response.status_code == 422
    assert response.json()["error"] == "ticket_not_used"
    assert response.json()["ticket"]["status"] == "active"
    assert db_state(ticket.event) == before


def test_ticket_renew_of_a_revoked_ticket_is_422(client, event):
    ticket = TicketFactory(event=event, status=Ticket.Status.REVOKED)
    response = client.post(renew_url(ticket))
    assert response.status_code == 422
    assert response.json()["error"] == "ticket_revoked"


def test_ticket_renew_unknown_ticket_is_404(client, event):
    url = f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets/424242/renew"
    assert client.post(url).status_code == 404


# --- Renew, multiple mode -------------------------------------------------------------------


@pytest.fixture
def days(event):
    return [CheckInTypeFactory(event=event, name=f"Day {n}", position=n) for n in (1, 2)]


def test_ticket_renew_multi_default_undoes_every_type(client, ticket, days):
    ids = [t.id for t in days]
    client.post(checkin_url(ticket), {"check_in_type_ids": ids}, format="json")

    response = client.post(renew_url(ticket))

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert [(r["check_in_type_id"], r["success"]) for r in body["renew_results"]] == [
        (ids[0], True),
        (ids[1], True),
    ]
    assert (body["ticket"]["status"], body["ticket"]["used_at"]) == ("active", None)
    assert TicketCheckIn.objects.count() == 0
    assert CheckInLog.objects.filter(action="renew").count() == 2


def test_ticket_renew_multi_one_type_keeps_the_ticket_used_from_the_other(client, ticket, days):
    day1_at, day2_at = "2026-03-01T10:00:00+07:00", "2026-03-02T10:00:00+07:00"
    client.post(
        checkin_url(ticket), {"check_in_type_ids": [days[0].id], "used_at": day1_at}, format="json"
    )
    client.post(
        checkin_url(ticket), {"check_in_type_ids": [days[1].id], "used_at": day2_at}, format="json"
    )

    response = client.post(renew_url(ticket), {"check_in_type_ids": days[0].id})

    body = response.json()
    assert response.status_code == 200
    assert body["renew_results"][0]["success"] is True
    assert (body["ticket"]["status"], body["ticket"]["used_at"]) == ("used", day2_at)
    ticket.refresh_from_db()
    assert ticket.used_at == datetime.fromisoformat(day2_at)
    assert list(TicketCheckIn.objects.values_list("check_in_type_id", flat=True)) == [days[1].id]


def test_ticket_renew_multi_type_not_checked_in_is_a_failed_result(client, ticket, days):
    client.post(checkin_url(ticket), {"check_in_type_ids": [days[0].id]}, format="json")
    response = client.post(
        renew_url(ticket), {"check_in_type_ids": [days[1].id, 777777]}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is False
    assert body["renew_results"] == [
        {
            "check_in_type_id": days[1].id,
            "check_in_type_name": "Day 2",
            "used_at": None,
            "success": False,
            "error": "Not checked in",
        },
        {
            "check_in_type_id": 777777,
            "check_in_type_name": None,
            "used_at": None,
            "success": False,
            "error": "Unknown check-in type",
        },
    ]
    assert body["ticket"]["status"] == "used"
    assert TicketCheckIn.objects.count() == 1


def test_ticket_renew_multi_of_an_unused_ticket_is_422(client, ticket, days):
    response = client.post(renew_url(ticket), {"check_in_type_ids": [days[0].id]}, format="json")
    assert response.status_code == 422
    assert response.json()["error"] == "ticket_not_used"


def test_ticket_renew_multi_ticket_used_before_types_existed_is_renewed(client, event):
    ticket = TicketFactory(event=event, status=Ticket.Status.USED)
    CheckInTypeFactory(event=event)
    response = client.post(renew_url(ticket))
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "active"
    assert CheckInLog.objects.get().check_in_type_id is None


# --- Invalidate -----------------------------------------------------------------------------


def test_ticket_invalidate_by_id_revokes_and_frees_the_place(client, ticket, ticket_type):
    ticket_type.refresh_from_db()
    sold = ticket_type.sold_count
    response = client.post(
        invalidate_url(ticket.event), {"ticket_id": ticket.id, "reason": " refunded "}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert (body["ticket"]["status"], body["ticket"]["revoke_note"]) == ("revoked", "refunded")
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == sold - 1


def test_ticket_invalidate_by_reference_code_ignores_case_and_spaces(app_token, ticket):
    response = client_for(app_token).post(
        invalidate_url(ticket.event), {"reference_code": "  gate0001 "}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == ticket.id
    assert response.json()["ticket"]["revoke_note"] is None


def test_ticket_invalidate_frees_the_api_quota_of_api_tickets(client, event):
    ticket_type = TicketTypeFactory(event=event, quantity=5, api_quota=2)
    ticket = TicketFactory(event=event, ticket_type=ticket_type, issued_via_api=True)
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (1, 1)
    assert client.post(invalidate_url(event), {"ticket_id": ticket.id}).status_code == 200
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (0, 0)


@pytest.mark.parametrize(
    ("status", "code"),
    [(Ticket.Status.REVOKED, "ticket_revoked"), (Ticket.Status.USED, "ticket_already_used")],
)
def test_ticket_invalidate_rejections_carry_the_ticket_and_change_nothing(
    client, event, status, code
):
    ticket = TicketFactory(event=event, status=status)
    before = db_state(event)
    response = client.post(invalidate_url(event), {"ticket_id": ticket.id})
    assert response.status_code == 422
    assert response.json()["error"] == code
    assert response.json()["ticket"]["id"] == ticket.id
    assert db_state(event) == before


@pytest.mark.parametrize(
    "body",
    [{}, {"reason": "x"}, {"ticket_id": "abc"}, {"ticket_id": 2**31}, {"reference_code": "x" * 65}],
)
def test_ticket_invalidate_malformed_input_is_400(client, ticket, body):
    before = db_state(ticket.event)
    response = client.post(invalidate_url(ticket.event), body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"
    assert db_state(ticket.event) == before


@pytest.mark.parametrize(
    "body",
    [
        {"ticket_id": 2147483647},
        {"reference_code": "NOPE0000"},
        {"reference_code": "???"},
        {"ticket_id": "OTHER", "reference_code": "GATE0001"},
    ],
)
def test_ticket_invalidate_unknown_ticket_is_404(client, ticket, organizer, body):
    if body.get("ticket_id") == "OTHER":  # both keys, naming different tickets
        body["ticket_id"] = TicketFactory(event=ticket.event).id
    response = client.post(invalidate_url(ticket.event), body, format="json")
    assert response.status_code == 404
    assert Ticket.objects.get(pk=ticket.pk).status == "active"


def test_ticket_invalidate_ticket_of_another_event_is_404(client, event, organizer):
    other = TicketFactory(event=EventFactory(organizer=organizer))
    response = client.post(invalidate_url(event), {"ticket_id": other.id})
    assert response.status_code == 404
    assert Ticket.objects.get(pk=other.pk).status == "active"


# --- Services called directly (admin, management commands) ---------------------------------


def test_ticket_revoke_service_is_scoped_to_the_event(event, ticket, organizer):
    other_event = EventFactory(organizer=organizer)
    with pytest.raises(NotFound):
        ticket_revoke(event=other_event, ticket_id=ticket.id, actor=Actor())


def test_order_cancel_revokes_its_tickets_and_frees_their_places(event, ticket_type):
    order = OrderFactory(event=event)
    tickets = TicketFactory.create_batch(2, event=event, order=order, ticket_type=ticket_type)
    already = TicketFactory(
        event=event, order=order, ticket_type=ticket_type, status=Ticket.Status.REVOKED
    )
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 2

    result = order_cancel(order_id=order.id, actor=Actor())

    assert (result.status, result.cancelled_at is not None) == ("cancelled", True)
    assert [t.status for t in Ticket.objects.filter(order=order).order_by("pk")] == [
        "revoked",
        "revoked",
        "revoked",
    ]
    assert Ticket.objects.get(pk=tickets[0].pk).revoke_note == f"Order #{order.id} cancelled."
    assert Ticket.objects.get(pk=already.pk).revoke_note is None
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 0
    # Again: nothing more to do, nothing freed twice.
    assert order_cancel(order_id=order.id, actor=Actor()).status == "cancelled"
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 0


def test_order_cancel_with_a_used_ticket_changes_nothing(event, ticket_type):
    order = OrderFactory(event=event)
    TicketFactory(event=event, order=order, ticket_type=ticket_type)
    used = TicketFactory(event=event, order=order, ticket_type=ticket_type)
    ticket_check_in(event=event, ticket_id=used.id, actor=Actor())
    before = db_state(event)
    with pytest.raises(TicketAlreadyUsed) as exc_info:
        order_cancel(order_id=order.id, actor=Actor())
    assert exc_info.value.ticket.pk == used.pk
    assert exc_info.value.extra["ticket"]["id"] == used.pk
    assert db_state(event) == before
    assert Order.objects.get(pk=order.pk).status == "paid"


def test_order_cancel_unknown_order_is_not_found(db):
    with pytest.raises(NotFound):
        order_cancel(order_id=123456, actor=Actor())

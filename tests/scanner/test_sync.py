"""GET .../events/{e}/tickets/sync: the scanner's copy of an event's tickets (CONTRACT §11)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checkin.models import TicketCheckIn
from events.models import TicketType
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tickets.models import Order, Ticket
from tickets.services.common import Actor
from tickets.services.revoking import order_cancel

from .helpers import copy_view, follow, scanner_view, sync_page, sync_url

# Committed writes: on PostgreSQL the feed returns what other transactions committed, and a
# test wrapped in one transaction would be reading its own uncommitted rows.
pytestmark = pytest.mark.django_db(transaction=True)


def test_sync_of_every_ticket_then_an_empty_delta(client, event, ticket_type):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(7)]
    TicketFactory()  # another event's ticket never shows

    copy: dict = {}
    cursor = follow(client, event, copy, limit=3)

    assert sorted(copy) == sorted(t.id for t in tickets)
    first = tickets[0]
    assert copy[first.id] == {
        "id": first.id,
        "reference_code": first.reference_code,
        "nfc_uid": None,
        "status": "active",
        "order_paid": True,
        "ticket_type_id": ticket_type.id,
        "ticket_type_name": "Regular",
        "firstname": first.firstname,
        "lastname": first.lastname,
        "used_at": None,
        "checked_in_type_ids": [],
        "updated_at": copy[first.id]["updated_at"],
    }
    later = sync_page(client, event, cursor)
    assert (later["tickets"], later["has_more"]) == ([], False)


def test_sync_pages_come_in_change_order_and_report_more(client, event, ticket_type):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(4)]
    Ticket.objects.filter(pk=tickets[0].pk).update(firstname="Changed")  # now the latest

    first = sync_page(client, event, limit=3)
    second = sync_page(client, event, first["next_cursor"], limit=3)

    assert [t["id"] for t in first["tickets"]] == [t.id for t in tickets[1:4]]
    assert first["has_more"] is True
    assert [t["id"] for t in second["tickets"]] == [tickets[0].id]
    assert (second["tickets"][0]["firstname"], second["has_more"]) == ("Changed", False)


def _change_by_every_path(event, ticket_type, tickets, member):
    """One change per path that may touch a ticket: each must move it in the feed."""
    a, b, c, d, e, _ = tickets
    a.firstname = "Admin"
    a.save()  # the admin's form saves the whole row
    b.lastname = "Bulk"
    Ticket.objects.bulk_update([b], ["lastname"])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE tickets_ticket SET nfc_uid = 'RAW01' WHERE id = %s", [c.pk])
    order_cancel(order_id=d.order_id, actor=Actor(user=member))
    check_in_type = CheckInTypeFactory(event=event, name="Day 1")
    TicketCheckIn.objects.create(ticket=e, check_in_type=check_in_type, used_at=e.created_at)
    TicketType.objects.filter(pk=ticket_type.pk).update(name="Renamed")
    new = TicketFactory(event=event, ticket_type=TicketTypeFactory(event=event, name="Late"))
    return check_in_type, new


def test_sync_delta_has_every_change_whatever_path_made_it(client, event, ticket_type, member):
    tickets = [
        TicketFactory(event=event, ticket_type=ticket_type, order=OrderFactory(event=event))
        for _ in range(6)
    ]
    copy: dict = {}
    cursor = follow(client, event, copy)

    check_in_type, new = _change_by_every_path(event, ticket_type, tickets, member)
    delta: dict = {}
    follow(client, event, delta, cursor)

    # The rename moves every ticket of the type: all six come again, and the new one.
    assert sorted(delta) == sorted([*(t.id for t in tickets), new.id])
    a, b, c, d, e, _ = tickets
    assert delta[a.id]["firstname"] == "Admin"
    assert delta[b.id]["lastname"] == "Bulk"
    assert delta[c.id]["nfc_uid"] == "RAW01"
    assert delta[d.id]["status"] == "revoked"
    assert delta[e.id]["checked_in_type_ids"] == [check_in_type.id]
    assert delta[a.id]["ticket_type_name"] == "Renamed"
    copy.update(delta)
    assert copy_view(copy) == scanner_view(event)


def test_sync_delta_has_a_check_in_type_undone(client, event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    day1 = CheckInTypeFactory(event=event, name="Day 1")
    TicketCheckIn.objects.create(ticket=ticket, check_in_type=day1, used_at=ticket.created_at)
    cursor = follow(client, event, {})

    TicketCheckIn.objects.filter(ticket=ticket).delete()
    delta = sync_page(client, event, cursor)

    assert [(t["id"], t["checked_in_type_ids"]) for t in delta["tickets"]] == [(ticket.id, [])]


def test_sync_cursor_of_another_event_or_tampered_is_400(client, event, ticket_type, organizer):
    TicketFactory(event=event, ticket_type=ticket_type)
    other = EventFactory(organizer=organizer)
    cursor = sync_page(client, event)["next_cursor"]
    head, _, signature = cursor.rpartition(":")
    forged = head.replace(f"{event.id}.", f"{event.id}.1", 1) + ":" + signature

    for bad_event, bad_cursor in [
        (other, cursor),
        (event, forged),
        (event, "garbage"),
        (event, cursor[:-1]),
        (event, "1.2.3"),
    ]:
        response = client.get(sync_url(bad_event), {"cursor": bad_cursor})
        assert response.status_code == 400, bad_cursor
        body = response.json()
        assert (body["error"], list(body["fields"])) == ("invalid_parameters", ["cursor"])


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "abc", "1.5", "99999999999"])
def test_sync_limit_outside_1_to_1000_is_400(client, event, limit):
    response = client.get(sync_url(event), {"limit": limit})
    assert response.status_code == 400
    assert (response.json()["error"], list(response.json()["fields"])) == (
        "invalid_parameters",
        ["limit"],
    )


def test_sync_limit_default_is_500(client, event, ticket_type):
    order = OrderFactory(event=event)
    Ticket.objects.bulk_create(
        Ticket(
            event=event,
            order=order,
            ticket_type=ticket_type,
            reference_code=f"BULK{i:05d}",
            page_token=f"token{i}",
        )
        for i in range(501)
    )
    page = sync_page(client, event)
    assert (len(page["tickets"]), page["has_more"]) == (500, True)


def test_sync_of_another_organizers_event_is_404(client):
    other = EventFactory()
    response = client.get(sync_url(other).replace(f"/{other.organizer_id}/", "/", 1))
    assert response.status_code == 404


def test_sync_page_costs_the_same_statements_for_1_and_many_tickets(client, event, ticket_type):
    day1 = CheckInTypeFactory(event=event, name="Day 1")

    def statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            sync_page(client, event, limit=1000)
        return len(queries)

    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    TicketCheckIn.objects.create(ticket=ticket, check_in_type=day1, used_at=ticket.created_at)
    sync_page(client, event)  # the token and the caller's role, now known to the process
    one = statements()
    for _ in range(30):
        t = TicketFactory(event=event, ticket_type=ticket_type)
        TicketCheckIn.objects.create(ticket=t, check_in_type=day1, used_at=t.created_at)
    assert statements() == one
    # The event, the horizon (PostgreSQL), the page, its check-ins, the event's signing keys.
    assert one == (5 if connection.vendor == "postgresql" else 4)


def test_sync_order_paid_is_the_orders_payment_state(client, event, ticket_type, member):
    paid, pending, cancelled = (
        TicketFactory(
            event=event, ticket_type=ticket_type, order=OrderFactory(event=event, status=s)
        )
        for s in (Order.Status.PAID, Order.Status.PENDING, Order.Status.PENDING)
    )
    order_cancel(order_id=cancelled.order_id, actor=Actor(user=member))

    copy: dict = {}
    follow(client, event, copy)

    assert {i: (r["status"], r["order_paid"]) for i, r in copy.items()} == {
        paid.id: ("active", True),
        pending.id: ("active", False),
        cancelled.id: ("revoked", False),
    }


def _pay(order):
    order.status, order.paid_at = Order.Status.PAID, timezone.now()
    order.save()


def _pay_by_update(order):
    Order.objects.filter(pk=order.pk).update(status=Order.Status.PAID, paid_at=timezone.now())


def _pay_by_sql(order):
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE orders_order SET status = 'paid', paid_at = %s WHERE id = %s",
            [timezone.now(), order.pk],
        )


def _back_to_pending(order):
    Order.objects.filter(pk=order.pk).update(status=Order.Status.PENDING, paid_at=None)


@pytest.mark.parametrize(
    "change, paid_before, order_paid",
    [
        (_pay, False, True),
        (_pay_by_update, False, True),
        (_pay_by_sql, False, True),
        (_back_to_pending, True, False),
    ],
    ids=["save", "update", "raw sql", "back to pending"],
)
def test_sync_payment_change_brings_the_orders_tickets_again(
    client, event, ticket_type, change, paid_before, order_paid
):
    status = Order.Status.PAID if paid_before else Order.Status.PENDING
    order = OrderFactory(event=event, status=status)
    mine = [TicketFactory(event=event, ticket_type=ticket_type, order=order) for _ in range(2)]
    TicketFactory(event=event, ticket_type=ticket_type)  # another order's: stays put
    cursor = follow(client, event, {})

    change(order)
    delta: dict = {}
    follow(client, event, delta, cursor)

    assert {i: r["order_paid"] for i, r in delta.items()} == {t.id: order_paid for t in mine}


def test_sync_order_edit_that_keeps_its_payment_state_moves_no_ticket(client, event, ticket_type):
    order = OrderFactory(event=event)
    TicketFactory(event=event, ticket_type=ticket_type, order=order)
    cursor = follow(client, event, {})

    Order.objects.filter(pk=order.pk).update(buyer_firstname="Edited")

    assert sync_page(client, event, cursor)["tickets"] == []


def test_sync_cancelled_order_brings_its_tickets_again_unpaid(client, event, ticket_type, member):
    order = OrderFactory(event=event)
    tickets = [TicketFactory(event=event, ticket_type=ticket_type, order=order) for _ in range(2)]
    Ticket.objects.filter(pk=tickets[1].pk).update(status=Ticket.Status.REVOKED)
    cursor = follow(client, event, {})

    order_cancel(order_id=order.pk, actor=Actor(user=member))
    delta: dict = {}
    follow(client, event, delta, cursor)

    assert {i: (r["status"], r["order_paid"]) for i, r in delta.items()} == {
        tickets[0].id: ("revoked", False),
        tickets[1].id: ("revoked", False),  # revoked before: only its order changed
    }

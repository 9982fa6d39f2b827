"""`GET /organizers/{o}/tickets|orders` (the caller's own) and `GET /tickets/search`."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import (
    EventFactory,
    FormFieldFactory,
    MembershipFactory,
    OrderFactory,
    TicketFactory,
    UserFactory,
)
from tests.support import TokenClient, mint_token
from tickets.models import Order

from .helpers import ids, set_times

pytestmark = pytest.mark.django_db


@pytest.fixture
def owned(buyer, event, other_organizer):
    """Tickets and orders that are the buyer's by each rule of CONTRACT §8, and some that aren't."""
    by_buyer = OrderFactory(event=event, buyer=buyer, buyer_email="elsewhere@example.com")
    by_email = OrderFactory(event=event, buyer_email="BUYER@example.COM")
    not_mine = OrderFactory(event=event, buyer_email="someone@example.com")
    foreign_event = EventFactory(organizer=other_organizer)
    foreign = OrderFactory(event=foreign_event, buyer=buyer)
    return {
        "orders": [by_buyer, by_email],
        "tickets": [
            TicketFactory(event=event, order=by_buyer, email="friend@example.com"),
            TicketFactory(event=event, order=by_email, email="friend2@example.com"),
            TicketFactory(event=event, order=not_mine, holder=buyer, email="x@example.com"),
            TicketFactory(event=event, order=not_mine, email="Buyer@Example.com"),
        ],
        "not_mine": [
            TicketFactory(event=event, order=not_mine, email="stranger@example.com"),
            TicketFactory(event=foreign_event, order=foreign),
        ],
        "foreign_order": foreign,
    }


def test_user_tickets_are_the_users_own_for_that_organizer(buyer_client, organizer, owned):
    response = buyer_client.get(f"/api/public/organizers/{organizer.id}/tickets")
    assert ids(response) == [t.id for t in owned["tickets"]]
    body = response.json()
    assert (body["count"], body["total"], body["page"], body["per_page"]) == (4, 4, 1, 10)
    assert set(body["tickets"][0]) == {
        "id",
        "order_id",
        "event_id",
        "status",
        "firstname",
        "lastname",
        "phone",
        "email",
        "reference_code",
        "ticket_url",
        "kind",
        "external_id",
        "revoke_note",
        "ticket_type",
        "price_label",
        "forms",
        "created_at",
        "updated_at",
        "used_at",
        "registered_at",
    }


def test_user_orders_are_the_users_own_for_that_organizer(buyer_client, organizer, event, owned):
    question = FormFieldFactory(event=event, label="Company", applies_to="order")
    first = owned["orders"][0]
    first.form_answers.create(field=question, value="Acme")
    first.refresh_from_db()

    response = buyer_client.get(f"/api/public/organizers/{organizer.id}/orders")

    assert ids(response, "orders") == [o.id for o in owned["orders"]]
    local = timezone.localtime
    assert response.json()["orders"][0] == {
        "id": first.id,
        "status": "paid",
        "buyer_firstname": first.buyer_firstname,
        "buyer_lastname": first.buyer_lastname,
        "buyer_email": "elsewhere@example.com",
        "buyer_phone": "+66812345678",
        "buyer_phone_country": "TH",
        "buyer_phone_country_code": "66",
        "buyer_phone_local": "0812345678",
        "event_id": event.id,
        "forms": [{"id": question.id, "label": "Company", "value": "Acme"}],
        "ticket_ids": [owned["tickets"][0].id],
        "created_at": local(first.created_at).isoformat(),
        "updated_at": local(first.updated_at).isoformat(),
        "paid_at": local(first.paid_at).isoformat(),
    }


def test_user_lists_filter_by_event_with_q_json(buyer_client, buyer, organizer, event, owned):
    second_event = EventFactory(organizer=organizer)
    later = TicketFactory(event=second_event, order=OrderFactory(event=second_event, buyer=buyer))
    base = f"/api/public/organizers/{organizer.id}"

    assert ids(
        buyer_client.get(f"{base}/tickets", {"q": f'{{"event_id": {second_event.id}}}'})
    ) == [later.id]
    assert ids(
        buyer_client.get(f"{base}/orders", {"q": f'{{"event_id": {event.id}}}'}), "orders"
    ) == [o.id for o in owned["orders"]]
    assert ids(buyer_client.get(f"{base}/orders", {"q": '{"status": "pending"}'}), "orders") == []
    bad = buyer_client.get(f"{base}/tickets", {"q": '{"event_id": "five"}'})
    assert bad.status_code == 400
    assert bad.json()["fields"] == {"q": ["Filter 'event_id': Enter a whole number."]}


def test_user_lists_q_text(buyer_client, organizer, owned):
    base = f"/api/public/organizers/{organizer.id}"
    assert ids(buyer_client.get(f"{base}/tickets", {"q": "FRIEND2"})) == [owned["tickets"][1].id]
    assert ids(buyer_client.get(f"{base}/orders", {"q": "elsewhere"}), "orders") == [
        owned["orders"][0].id
    ]


@pytest.mark.parametrize("field", ["id", "created_at", "paid_at", "updated_at"])
def test_user_orders_order_by_both_ways(buyer_client, buyer, organizer, event, field):
    now = timezone.now()
    a = OrderFactory(event=event, buyer=buyer)
    b = OrderFactory(event=event, buyer=buyer, status=Order.Status.PENDING)
    c = OrderFactory(event=event, buyer=buyer)
    if field != "id":
        set_times(Order, a.id, **{field: now + timedelta(hours=1)})
        set_times(Order, c.id, **{field: now})
        if field != "paid_at":
            set_times(Order, b.id, **{field: now})
    url = f"/api/public/organizers/{organizer.id}/orders"

    asc = ids(buyer_client.get(url, {"order_by": field}), "orders")
    desc = ids(buyer_client.get(url, {"order_by": field, "order": "desc"}), "orders")

    expected = {
        "id": [a.id, b.id, c.id],
        "created_at": [b.id, c.id, a.id],
        "updated_at": [b.id, c.id, a.id],
        "paid_at": [c.id, a.id, b.id],  # b is unpaid: null last ascending
    }[field]
    assert asc == expected
    assert desc == expected[::-1]


@pytest.mark.parametrize("field", ["id", "created_at", "updated_at", "used_at"])
def test_user_tickets_order_by_both_ways(buyer_client, buyer, organizer, event, field):
    now = timezone.now()
    a, b, c = (TicketFactory(event=event, holder=buyer, status="used") for _ in range(3))
    if field != "id":
        set_times(a.__class__, a.id, **{field: now + timedelta(hours=1)})
        set_times(a.__class__, b.id, **{field: now})
        set_times(a.__class__, c.id, **{field: now})
    url = f"/api/public/organizers/{organizer.id}/tickets"
    expected = [a.id, b.id, c.id] if field == "id" else [b.id, c.id, a.id]
    assert ids(buyer_client.get(url, {"order_by": field})) == expected
    assert ids(buyer_client.get(url, {"order_by": field, "order": "desc"})) == expected[::-1]
    response = buyer_client.get(url, {"order_by": "reference_code"})  # event lists only
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["order_by"]


def test_user_lists_need_a_user_token_of_that_organizer(
    app_client, api_client, organizer, other_application, buyer, platform_application
):
    for path in ("tickets", "orders"):
        url = f"/api/public/organizers/{organizer.id}/{path}"
        assert api_client.get(url).status_code == 401
        response = app_client.get(url)
        assert response.status_code == 403
        assert response.json()["error"] == "user_token_required"
        mismatched = TokenClient(mint_token(application=other_application, user=buyer))
        assert mismatched.get(url).json()["error"] == "organizer_mismatch"
        platform = TokenClient(mint_token(application=platform_application, user=buyer))
        assert platform.get(url).status_code == 200
        no_scope = TokenClient(
            mint_token(application=platform_application, user=buyer, scope="organizer")
        )
        assert no_scope.get(url).json()["error"] == "insufficient_scope"
        assert api_client.get(f"/api/public/organizers/2147483647/{path}").status_code == 401


def test_user_with_blank_email_does_not_match_blank_emails(application, organizer, event):
    nobody = UserFactory(email="")
    TicketFactory(event=event, email="")
    OrderFactory(event=event, buyer_email="")
    client = TokenClient(mint_token(application=application, user=nobody))
    assert client.get(f"/api/public/organizers/{organizer.id}/tickets").json()["total"] == 0
    assert client.get(f"/api/public/organizers/{organizer.id}/orders").json()["total"] == 0


# --- GET /tickets/search -----------------------------------------------------------------------

SEARCH = "/api/public/tickets/search"


def test_ticket_search_with_public_scope_finds_only_own_tickets(buyer_client, event, owned):
    mine, stranger = owned["tickets"][3], owned["not_mine"][0]

    found = buyer_client.get(
        SEARCH, {"event_id": event.id, "reference_code": mine.reference_code.lower()}
    )
    hidden = buyer_client.get(
        SEARCH, {"event_id": event.id, "reference_code": stranger.reference_code}
    )

    assert found.status_code == 200
    assert found.json()["success"] is True
    assert found.json()["ticket"]["id"] == mine.id
    assert hidden.status_code == 404
    assert hidden.json() == {"success": False, "error": "not_found", "message": "Ticket not found."}


def test_ticket_search_with_organizer_scope_finds_any_ticket_of_the_organizer(
    organizer_client, member, event, owned, other_organizer
):
    stranger = owned["not_mine"][0]
    response = organizer_client.get(
        SEARCH, {"event_id": event.id, "reference_code": stranger.reference_code}
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == stranger.id
    foreign = owned["not_mine"][1]
    response = organizer_client.get(
        SEARCH, {"event_id": foreign.event_id, "reference_code": foreign.reference_code}
    )
    assert response.status_code == 404


def test_ticket_search_with_application_token_sees_its_owners_tickets(app_client, event, owned):
    stranger, foreign = owned["not_mine"]
    assert (
        app_client.get(
            SEARCH, {"event_id": event.id, "reference_code": stranger.reference_code}
        ).status_code
        == 200
    )
    miss = app_client.get(
        SEARCH, {"event_id": foreign.event_id, "reference_code": foreign.reference_code}
    )
    assert miss.status_code == 404


def test_ticket_search_token_of_an_organizer_app_stays_in_that_organizer(
    other_application, other_organizer, buyer, owned
):
    # The buyer's own ticket of the first organizer, through the second organizer's app.
    MembershipFactory(user=buyer, organizer=other_organizer)
    mine = owned["tickets"][0]
    client = TokenClient(
        mint_token(application=other_application, user=buyer, scope="public organizer")
    )
    response = client.get(
        SEARCH, {"event_id": mine.event_id, "reference_code": mine.reference_code}
    )
    assert response.status_code == 404


def test_ticket_search_access_errors(api_client, platform_application, application, buyer, event):
    assert api_client.get(SEARCH, {"event_id": event.id, "reference_code": "X"}).status_code == 401
    platform_app = TokenClient(mint_token(application=platform_application))
    response = platform_app.get(SEARCH, {"event_id": event.id, "reference_code": "ABCD2345"})
    assert response.status_code == 403
    assert response.json()["error"] == "application_not_owned"
    no_scope = TokenClient(mint_token(application=application, user=buyer, scope="read"))
    response = no_scope.get(SEARCH, {"event_id": event.id, "reference_code": "ABCD2345"})
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert response["WWW-Authenticate"] == 'Bearer error="insufficient_scope", scope="public"'


@pytest.mark.parametrize(
    "params, fields",
    [
        ({}, ["event_id", "reference_code"]),
        ({"event_id": "1"}, ["reference_code"]),
        ({"reference_code": "ABCD2345"}, ["event_id"]),
        ({"event_id": "x", "reference_code": "ABCD2345"}, ["event_id"]),
        ({"event_id": "2147483648", "reference_code": "ABCD2345"}, ["event_id"]),
        ({"event_id": "1", "reference_code": ""}, ["reference_code"]),
    ],
)
def test_ticket_search_needs_event_and_code(buyer_client, params, fields):
    response = buyer_client.get(SEARCH, params)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"
    assert list(response.json()["fields"]) == fields


def test_ticket_search_of_another_applications_platform_user(
    platform_application, buyer, owned, event
):
    """A platform application's user token is not bound to one organizer."""
    mine = owned["tickets"][0]
    client = TokenClient(mint_token(application=platform_application, user=buyer))
    response = client.get(SEARCH, {"event_id": event.id, "reference_code": mine.reference_code})
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == mine.id

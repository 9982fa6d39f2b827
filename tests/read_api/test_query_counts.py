"""No N+1: each list costs the same number of queries for 1 item as for 100 (CONTRACT §6).

The budgets: token (1) + organizer with the caller's membership (1) [+ event (1)] + page (1) +
count (1) + one per prefetched relation, for a full page (a last page, shorter, needs no count).
An application token on its own organizer's path needs no organizer statement (its organizer
exists while it does). Search and detail are constant by construction.
"""

import pytest

from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    FormFieldFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tickets.models import TicketFormAnswer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _cold_token_cache(settings):
    """The budgets count the token lookup: the worst case, a token not in the cache yet."""
    settings.API_TOKEN_CACHE_SECONDS = 0


def _count(client, url, django_assert_max_num_queries, budget: int, key: str, expected: int) -> int:
    with django_assert_max_num_queries(budget) as captured:
        response = client.get(url, {"per_page": expected})  # a full page: counted
    assert response.status_code == 200, response.content
    assert len(response.json()[key]) == expected
    return len(captured.captured_queries)


def _tickets(event, n, **kwargs):
    question = FormFieldFactory(event=event)
    types = [TicketTypeFactory(event=event) for _ in range(3)]
    for i in range(n):
        ticket = TicketFactory(event=event, ticket_type=types[i % 3], **kwargs)
        TicketFormAnswer.objects.create(ticket=ticket, field=question, value=str(i))


def test_event_tickets_list_queries_do_not_grow(
    app_client, organizer, event, django_assert_max_num_queries
):
    # token, event, the page with its count (ticket types joined), form answers
    budget = 4
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets"
    _tickets(event, 1)
    one = _count(app_client, url, django_assert_max_num_queries, budget, "tickets", 1)
    _tickets(event, 99)
    hundred = _count(app_client, url, django_assert_max_num_queries, budget, "tickets", 100)
    assert one == hundred == budget


def test_event_tickets_list_without_answers_asks_for_none(
    app_client, organizer, event, django_assert_max_num_queries
):
    # token, event, the page with its count (ticket types joined, whether each has answers)
    budget = 3
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets"
    TicketFactory.create_batch(3, event=event)
    assert _count(app_client, url, django_assert_max_num_queries, budget, "tickets", 3) == budget


def test_event_tickets_list_shows_each_tickets_own_answers(app_client, organizer, event):
    question = FormFieldFactory(event=event)
    tickets = TicketFactory.create_batch(4, event=event)
    for ticket in tickets[1::2]:
        TicketFormAnswer.objects.create(ticket=ticket, field=question, value=f"for {ticket.id}")
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets"
    listed = app_client.get(url, {"order_by": "id"}).json()["tickets"]
    assert [[a["value"] for a in t["forms"]] for t in listed] == [
        [],
        [f"for {tickets[1].id}"],
        [],
        [f"for {tickets[3].id}"],
    ]


def test_events_list_queries_do_not_grow(app_client, organizer, django_assert_max_num_queries):
    budget = 3  # token, count, page
    url = f"/api/public/organizers/{organizer.id}/events"
    EventFactory(organizer=organizer)
    one = _count(app_client, url, django_assert_max_num_queries, budget, "events", 1)
    for _ in range(99):
        EventFactory(organizer=organizer)
    hundred = _count(app_client, url, django_assert_max_num_queries, budget, "events", 100)
    assert one == hundred == budget


def test_user_tickets_queries_do_not_grow(
    buyer_client, buyer, organizer, event, django_assert_max_num_queries
):
    budget = 5  # token, organizer, count, page, form answers
    url = f"/api/public/organizers/{organizer.id}/tickets"
    _tickets(event, 1, holder=buyer)
    one = _count(buyer_client, url, django_assert_max_num_queries, budget, "tickets", 1)
    _tickets(event, 99, email=buyer.email)
    hundred = _count(buyer_client, url, django_assert_max_num_queries, budget, "tickets", 100)
    assert one == hundred == budget


def test_user_orders_queries_do_not_grow(
    buyer_client, buyer, organizer, event, django_assert_max_num_queries
):
    budget = 6  # token, organizer, count, page, form answers, ticket ids
    url = f"/api/public/organizers/{organizer.id}/orders"
    question = FormFieldFactory(event=event, applies_to="order")

    def orders(n):
        for _ in range(n):
            order = OrderFactory(event=event, buyer=buyer)
            order.form_answers.create(field=question, value="x")
            TicketFactory.create_batch(2, event=event, order=order)

    orders(1)
    one = _count(buyer_client, url, django_assert_max_num_queries, budget, "orders", 1)
    orders(99)
    hundred = _count(buyer_client, url, django_assert_max_num_queries, budget, "orders", 100)
    assert one == hundred == budget


def test_check_in_types_queries_do_not_grow(
    app_client, organizer, event, django_assert_max_num_queries
):
    budget = 4  # token, event, check-in types, their ticket types
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/check_in_types"
    types = [TicketTypeFactory(event=event) for _ in range(3)]
    CheckInTypeFactory(event=event, ticket_types=types[:2])
    one = _count(app_client, url, django_assert_max_num_queries, budget, "check_in_types", 1)
    for _ in range(99):
        CheckInTypeFactory(event=event, ticket_types=types)
    hundred = _count(app_client, url, django_assert_max_num_queries, budget, "check_in_types", 100)
    assert one == hundred == budget


def test_event_detail_queries_are_constant(
    app_client, organizer, event, django_assert_max_num_queries
):
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}"
    counts = []
    for _ in range(2):
        for _ in range(50):
            TicketTypeFactory(event=event)
        with django_assert_max_num_queries(3) as captured:  # token, event, types
            assert app_client.get(url).status_code == 200
        counts.append(len(captured.captured_queries))
    assert counts == [3, 3]


@pytest.mark.parametrize("key", ["reference_code", "nfc_uid", "ticket_id"])
def test_event_ticket_search_queries_are_constant(
    app_client, organizer, event, django_assert_max_num_queries, key
):
    _tickets(event, 3)
    ticket = TicketFactory(event=event, nfc_uid="04:AB", reference_code="FIND2345")
    value = {"reference_code": "find2345", "nfc_uid": "04:AB", "ticket_id": ticket.id}[key]
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets/search"
    # token, ticket (with its type, its event's organizer and whether it has form answers: none)
    with django_assert_max_num_queries(2) as captured:
        response = app_client.get(url, {key: value})
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == ticket.id
    assert len(captured.captured_queries) == 2


def test_event_ticket_search_by_a_member_queries_are_constant(
    organizer_client, organizer, event, django_assert_max_num_queries
):
    ticket = TicketFactory(event=event, reference_code="FIND2345")
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets/search"
    # token, organizer with the user's membership, ticket
    with django_assert_max_num_queries(3) as captured:
        response = organizer_client.get(url, {"reference_code": "find2345"})
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == ticket.id
    assert len(captured.captured_queries) == 3


def test_ticket_search_queries_are_constant(organizer_client, event, django_assert_max_num_queries):
    _tickets(event, 3)
    ticket = TicketFactory(event=event, reference_code="FIND2345")
    # token, ticket (with its type and whether it has form answers: none)
    with django_assert_max_num_queries(2) as captured:
        response = organizer_client.get(
            "/api/public/tickets/search", {"event_id": event.id, "reference_code": "find2345"}
        )
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == ticket.id
    assert len(captured.captured_queries) == 2

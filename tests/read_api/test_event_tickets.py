"""`GET .../events/{e}/tickets` (filters, order, pages, keyset) and `.../tickets/search`."""

from datetime import UTC, timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from tests.factories import (
    EventFactory,
    FormFieldFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tickets.models import Ticket, TicketFormAnswer

from .helpers import ids, set_times

pytestmark = pytest.mark.django_db


def test_event_tickets_list_returns_the_spec_shape(app_client, event, ticket_type, tickets_url):
    order = OrderFactory(event=event)
    ticket = TicketFactory(
        event=event,
        ticket_type=ticket_type,
        order=order,
        firstname="Somsak",
        lastname="Jaidee",
        email="somsak@example.com",
        phone="+66812345678",
        reference_code="ABCD2345",
        status="used",
    )
    question = FormFieldFactory(event=event, label="T-shirt size", position=1)
    TicketFormAnswer.objects.create(ticket=ticket, field=question, value="L")
    TicketFactory()  # another event's ticket is not listed
    ticket.refresh_from_db()

    response = app_client.get(tickets_url)

    assert response.status_code == 200
    local = timezone.localtime
    assert response.json() == {
        "success": True,
        "tickets": [
            {
                "id": ticket.id,
                "order_id": order.id,
                "event_id": event.id,
                "status": "used",
                "firstname": "Somsak",
                "lastname": "Jaidee",
                "phone": "+66812345678",
                "email": "somsak@example.com",
                "reference_code": "ABCD2345",
                "ticket_url": f"{settings.SITE_URL}/t/{ticket.page_token}",
                "kind": "normal",
                "external_id": None,
                "revoke_note": None,
                "ticket_type": {
                    "id": str(ticket_type.id),
                    "name": "Regular",
                    "price": "1500.00",
                    "price_satangs": "150000",
                    "kind": "normal",
                },
                "price_label": "฿1,500.00",
                "forms": [{"id": question.id, "label": "T-shirt size", "value": "L"}],
                "created_at": local(ticket.created_at).isoformat(),
                "updated_at": local(ticket.updated_at).isoformat(),
                "used_at": local(ticket.used_at).isoformat(),
                "registered_at": None,
            }
        ],
        "count": 1,
        "total": 1,
        "page": 1,
        "per_page": 10,
    }


def test_price_labels(app_client, event, tickets_url):
    free = TicketTypeFactory(event=event, price=0)
    pack = TicketTypeFactory(event=event, price=300000, kind="pack", pack_size=4)
    paid = TicketTypeFactory(event=event, price=123456789)
    tickets = [
        TicketFactory(event=event, ticket_type=free),
        TicketFactory(event=event, ticket_type=pack),
        TicketFactory(event=event, ticket_type=paid),
        TicketFactory(event=event, ticket_type=paid, kind="complimentary"),
    ]
    body = app_client.get(tickets_url).json()
    assert [t["id"] for t in body["tickets"]] == [t.id for t in tickets]
    assert [t["price_label"] for t in body["tickets"]] == [
        "Free",
        "฿3,000.00 / 4 tickets",
        "฿1,234,567.89",
        "Complimentary",
    ]
    assert body["tickets"][2]["ticket_type"]["price"] == "1234567.89"


def test_status_filter_takes_a_comma_list(app_client, event, ticket_type, tickets_url):
    active = TicketFactory(event=event, ticket_type=ticket_type, status="active")
    used = TicketFactory(event=event, ticket_type=ticket_type, status="used")
    revoked = TicketFactory(event=event, ticket_type=ticket_type, status="revoked")

    assert ids(app_client.get(tickets_url, {"status": "used"})) == [used.id]
    assert ids(app_client.get(tickets_url, {"status": "revoked, active"})) == [
        active.id,
        revoked.id,
    ]
    assert ids(app_client.get(tickets_url, {"status": "active,used,revoked"})) == [
        active.id,
        used.id,
        revoked.id,
    ]
    bad = app_client.get(tickets_url, {"status": "active,lost"})
    assert bad.status_code == 400
    assert bad.json()["fields"] == {
        "status": ["Unknown value 'lost'. Allowed: active, used, revoked."]
    }


def test_ticket_type_filter(app_client, event, tickets_url):
    regular, vip = TicketTypeFactory(event=event), TicketTypeFactory(event=event)
    TicketFactory(event=event, ticket_type=regular)
    mine = TicketFactory(event=event, ticket_type=vip)

    assert ids(app_client.get(tickets_url, {"ticket_type_id": vip.id})) == [mine.id]
    assert ids(app_client.get(tickets_url, {"ticket_type_id": 2147483647})) == []
    for bad in ("abc", "0", "2147483648", "1.5"):
        response = app_client.get(tickets_url, {"ticket_type_id": bad})
        assert response.status_code == 400, bad
        assert list(response.json()["fields"]) == ["ticket_type_id"]


def test_email_filter_is_a_case_insensitive_contains(app_client, event, ticket_type, tickets_url):
    match = TicketFactory(event=event, ticket_type=ticket_type, email="Nok.Buyer@Example.com")
    TicketFactory(event=event, ticket_type=ticket_type, email="other@example.com")

    assert ids(app_client.get(tickets_url, {"email": "nok.buyer@EXAMPLE"})) == [match.id]
    assert ids(app_client.get(tickets_url, {"email": "%"})) == []  # LIKE wildcards are escaped
    assert app_client.get(tickets_url, {"email": "a\x00b"}).status_code == 400


def test_phone_filter_compares_digits(app_client, event, ticket_type, tickets_url):
    thai = TicketFactory(event=event, ticket_type=ticket_type, phone="+66812345678")
    TicketFactory(event=event, ticket_type=ticket_type, phone="+66899999999")

    for typed in ("081-234-5678", "0812345678", "+66 81 234 5678", "2345678", "812 345"):
        assert ids(app_client.get(tickets_url, {"phone": typed})) == [thai.id], typed
    response = app_client.get(tickets_url, {"phone": "call me"})
    assert response.status_code == 400
    assert response.json()["fields"] == {"phone": ["Enter at least one digit."]}


def test_updated_before_and_after(app_client, event, ticket_type, tickets_url):
    base = timezone.now().replace(microsecond=0)
    old = TicketFactory(event=event, ticket_type=ticket_type)
    new = TicketFactory(event=event, ticket_type=ticket_type)
    set_times(Ticket, old.id, updated_at=base - timedelta(hours=2))
    set_times(Ticket, new.id, updated_at=base)

    cut = (base - timedelta(hours=1)).isoformat()
    assert ids(app_client.get(tickets_url, {"updated_after": cut})) == [new.id]
    assert ids(app_client.get(tickets_url, {"updated_before": cut})) == [old.id]
    # Bounds are strict; `Z` and offsets both read; a naive time is in the site zone (+07:00).
    exact_utc = base.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(app_client.get(tickets_url, {"updated_before": exact_utc})) == [old.id]
    naive_site = timezone.localtime(base).replace(tzinfo=None).isoformat()
    assert ids(app_client.get(tickets_url, {"updated_after": naive_site})) == []
    assert ids(app_client.get(tickets_url, {"updated_before": naive_site})) == [old.id]
    for bad in ("yesterday", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59-14:00"):
        response = app_client.get(tickets_url, {"updated_after": bad})
        assert response.status_code == 400, bad
        assert list(response.json()["fields"]) == ["updated_after"]


def test_min_id_and_max_id_page_by_keyset(app_client, event, ticket_type, tickets_url):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(5)]
    all_ids = [t.id for t in tickets]

    first = ids(app_client.get(tickets_url, {"per_page": 2, "min_id": 0}))
    second = ids(app_client.get(tickets_url, {"per_page": 2, "min_id": first[-1]}))
    third = ids(app_client.get(tickets_url, {"per_page": 2, "min_id": second[-1]}))
    done = app_client.get(tickets_url, {"per_page": 2, "min_id": third[-1]}).json()

    assert first + second + third == all_ids
    assert done["tickets"] == [] and done["total"] == 0
    backwards = ids(
        app_client.get(tickets_url, {"order": "desc", "per_page": 2, "max_id": all_ids[3]})
    )
    assert backwards == [all_ids[2], all_ids[1]]
    between = ids(app_client.get(tickets_url, {"min_id": all_ids[0], "max_id": all_ids[4]}))
    assert between == all_ids[1:4]
    assert app_client.get(tickets_url, {"min_id": -1}).status_code == 400
    assert app_client.get(tickets_url, {"max_id": 0}).status_code == 400
    assert app_client.get(tickets_url, {"min_id": 2**31}).status_code == 400


def test_q_searches_code_names_and_email(app_client, event, ticket_type, tickets_url):
    by_code = TicketFactory(event=event, ticket_type=ticket_type, reference_code="XYZW7788")
    by_first = TicketFactory(event=event, ticket_type=ticket_type, firstname="Xyzabel")
    by_last = TicketFactory(event=event, ticket_type=ticket_type, lastname="Bxyzw")
    by_email = TicketFactory(event=event, ticket_type=ticket_type, email="xyz@example.com")
    TicketFactory(event=event, ticket_type=ticket_type, firstname="Nobody", lastname="Else")

    assert ids(app_client.get(tickets_url, {"q": "XYZ"})) == [
        by_code.id,
        by_first.id,
        by_last.id,
        by_email.id,
    ]


def test_q_does_not_match_across_two_fields(app_client, event, ticket_type, tickets_url):
    """The fields are searched as one text joined by a separator no one types."""
    ticket = TicketFactory(event=event, ticket_type=ticket_type, firstname="Malee", lastname="Wong")

    assert ids(app_client.get(tickets_url, {"q": "malee"})) == [ticket.id]
    assert ids(app_client.get(tickets_url, {"q": "maleewong"})) == []
    assert ids(app_client.get(tickets_url, {"q": "malee wong"})) == []


def test_q_json_filters(app_client, event, tickets_url):
    vip = TicketTypeFactory(event=event)
    target = TicketFactory(event=event, ticket_type=vip, reference_code="ABCD2345", status="used")
    TicketFactory(event=event, status="used")

    def q(value):
        return ids(app_client.get(tickets_url, {"q": value}))

    assert q('{"reference_code": " abcd2345 "}') == [target.id]
    assert q(f'{{"ticket_type_id": {vip.id}, "status": "used"}}') == [target.id]
    assert q(f'{{"order_id": {target.order_id}}}') == [target.id]
    response = app_client.get(tickets_url, {"q": '{"holder": 1}'})
    assert response.status_code == 400
    assert response.json()["message"].startswith("Parameter 'q': Unknown filter key 'holder'.")


@pytest.mark.parametrize("field", ["created_at", "updated_at", "used_at", "reference_code"])
def test_order_by_each_field_both_ways_ties_on_id(
    app_client, event, ticket_type, tickets_url, field
):
    now = timezone.now()
    a = TicketFactory(
        event=event, ticket_type=ticket_type, reference_code="CCCC0000", status="used"
    )
    b = TicketFactory(
        event=event, ticket_type=ticket_type, reference_code="AAAA0000", status="used"
    )
    c = TicketFactory(
        event=event, ticket_type=ticket_type, reference_code="BBBB0000", status="used"
    )
    if field != "reference_code":
        set_times(Ticket, a.id, **{field: now + timedelta(hours=1)})
        set_times(Ticket, b.id, **{field: now})
        set_times(Ticket, c.id, **{field: now})  # ties with b: id decides, same direction
    expected_asc = [b.id, c.id, a.id]

    ascending = ids(app_client.get(tickets_url, {"order_by": field}))
    descending = ids(app_client.get(tickets_url, {"order_by": field, "order": "desc"}))

    assert ascending == expected_asc
    assert descending == expected_asc[::-1]


def test_used_at_nulls_last_ascending_first_descending(app_client, event, ticket_type, tickets_url):
    unused_1 = TicketFactory(event=event, ticket_type=ticket_type, status="active")
    used = TicketFactory(event=event, ticket_type=ticket_type, status="used")
    unused_2 = TicketFactory(event=event, ticket_type=ticket_type, status="active")

    asc = ids(app_client.get(tickets_url, {"order_by": "used_at", "order": "asc"}))
    desc = ids(app_client.get(tickets_url, {"order_by": "used_at", "order": "desc"}))

    assert asc == [used.id, unused_1.id, unused_2.id]
    assert desc == [unused_2.id, unused_1.id, used.id]


def test_order_by_id_both_ways_and_unknown_key(app_client, event, ticket_type, tickets_url):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(3)]
    assert ids(app_client.get(tickets_url, {"order_by": "id"})) == [t.id for t in tickets]
    assert ids(app_client.get(tickets_url, {"order": "desc"})) == [t.id for t in tickets][::-1]
    response = app_client.get(tickets_url, {"order_by": "email"})
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "order_by": ["Select a valid choice. email is not one of the available choices."]
    }


def test_pagination_edges(app_client, event, ticket_type, tickets_url):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(3)]
    page2 = app_client.get(tickets_url, {"per_page": 2, "page": 2}).json()
    assert [t["id"] for t in page2["tickets"]] == [tickets[2].id]
    assert (page2["count"], page2["total"], page2["page"], page2["per_page"]) == (1, 3, 2, 2)
    beyond = app_client.get(tickets_url, {"page": 2147483647}).json()
    assert beyond["tickets"] == [] and beyond["total"] == 3 and beyond["page"] == 2147483647
    for params in ({"per_page": 0}, {"per_page": 101}, {"per_page": "abc"}, {"page": 0}):
        response = app_client.get(tickets_url, params)
        assert response.status_code == 400, params
        assert list(response.json()["fields"]) == list(params)
    full = app_client.get(tickets_url, {"per_page": 100}).json()
    assert full["per_page"] == 100 and full["count"] == 3


def test_a_list_without_filters_pages_as_the_filtered_list_does(
    app_client, event, ticket_type, tickets_url
):
    """With no filter parameter the list reads its pages from one statement compiled once
    (`event_ticket_page`); with one, through the filters: the same pages either way."""
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(7)]
    question = FormFieldFactory(event=event, label="Size", position=1)
    TicketFormAnswer.objects.create(ticket=tickets[4], field=question, value="M")
    TicketFactory()  # another event's
    for page in range(1, 5):
        plain = app_client.get(tickets_url, {"per_page": 3, "page": page}).json()
        filtered = app_client.get(tickets_url, {"per_page": 3, "page": page, "order": "asc"})
        assert plain == filtered.json()
        assert plain["total"] == 7
    second = app_client.get(tickets_url, {"per_page": 3, "page": 2}).json()["tickets"]
    assert [t["id"] for t in second] == [t.id for t in tickets[3:6]]
    assert second[1]["forms"] == [{"id": question.id, "label": "Size", "value": "M"}]


def test_access_rules_for_event_tickets(api_client, buyer_client, organizer_client, tickets_url):
    assert organizer_client.get(tickets_url).status_code == 200
    response = api_client.get(tickets_url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert buyer_client.get(tickets_url).json()["error"] == "insufficient_scope"


# --- search ------------------------------------------------------------------------------------


@pytest.fixture
def search_url(tickets_url):
    return f"{tickets_url}/search"


def test_search_by_each_key(app_client, event, ticket_type, search_url):
    ticket = TicketFactory(
        event=event, ticket_type=ticket_type, reference_code="QW3RTY-99", nfc_uid="04:A2:19"
    )
    TicketFactory(event=event, ticket_type=ticket_type)

    for params in (
        {"reference_code": "QW3RTY-99"},
        {"reference_code": "  qw3rty-99 "},
        {"nfc_uid": "04:A2:19"},
        {"ticket_id": str(ticket.id)},
    ):
        response = app_client.get(search_url, params)
        assert response.status_code == 200, params
        body = response.json()
        assert set(body) == {"success", "ticket"}
        assert body["success"] is True
        assert body["ticket"]["id"] == ticket.id
        assert body["ticket"]["reference_code"] == "QW3RTY-99"


def test_search_misses_are_404(app_client, event, ticket_type, search_url, other_organizer):
    other_event_ticket = TicketFactory(event=EventFactory(organizer=event.organizer))
    foreign = TicketFactory(
        event=EventFactory(organizer=other_organizer), reference_code="ZZZZ9999"
    )
    for params in (
        {"reference_code": "NOPE1234"},
        {"nfc_uid": "00:00"},
        {"ticket_id": other_event_ticket.id},
        {"ticket_id": 2147483647},
        {"reference_code": foreign.reference_code},
    ):
        response = app_client.get(search_url, params)
        assert response.status_code == 404, params
        assert response.json() == {
            "success": False,
            "error": "not_found",
            "message": "Ticket not found.",
        }


@pytest.mark.parametrize(
    "params, fields",
    [
        ({}, ["reference_code", "nfc_uid", "ticket_id"]),
        ({"reference_code": "ABC", "ticket_id": "1"}, ["reference_code", "ticket_id"]),
        (
            {"reference_code": "A", "nfc_uid": "B", "ticket_id": "1"},
            ["reference_code", "nfc_uid", "ticket_id"],
        ),
    ],
)
def test_search_needs_exactly_one_key(app_client, search_url, params, fields):
    response = app_client.get(search_url, params)
    assert response.status_code == 400
    message = "Send exactly one of reference_code, nfc_uid or ticket_id."
    assert response.json() == {
        "success": False,
        "error": "invalid_parameters",
        "message": f"Parameter '{fields[0]}': {message}",
        "fields": {field: [message] for field in fields},
    }


@pytest.mark.parametrize(
    "params, field",
    [
        ({"ticket_id": "abc"}, "ticket_id"),
        ({"ticket_id": "2147483648"}, "ticket_id"),
        ({"ticket_id": ""}, "ticket_id"),
        ({"reference_code": "   "}, "reference_code"),
        ({"reference_code": "X" * 65}, "reference_code"),
        ({"reference_code": "AB\x00CD"}, "reference_code"),
        ({"nfc_uid": "N" * 65}, "nfc_uid"),
    ],
)
def test_search_rejects_malformed_keys(app_client, search_url, params, field):
    response = app_client.get(search_url, params)
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [field]

"""`GET /organizers/{o}/events`, `.../events/{e}` and `.../events/{e}/check_in_types`."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from events.models import Event
from tests.factories import (
    ApplicationFactory,
    CheckInTypeFactory,
    EventFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tests.support import TokenClient, mint_token

from .helpers import ids, set_times

pytestmark = pytest.mark.django_db

GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,"
    b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


def test_events_list_returns_the_spec_shape(app_client, organizer, events_url):
    start = timezone.now().replace(microsecond=0) + timedelta(days=3)
    event = EventFactory(
        organizer=organizer,
        title="Songkran Beats",
        description="",
        description_en="Water festival",
        location_name="Impact Arena",
        start_at=start,
        end_at=start + timedelta(hours=5),
        poster=SimpleUploadedFile("poster.gif", GIF, content_type="image/gif"),
    )
    EventFactory()  # another organizer's event is not listed

    response = app_client.get(events_url)

    assert response.status_code == 200
    body = response.json()
    event.refresh_from_db()
    poster_url = f"http://testserver{event.poster.url}"
    assert body == {
        "success": True,
        "events": [
            {
                "id": event.id,
                "status": "active",
                "cover": None,
                "covers": {"original": None},
                "poster": poster_url,
                "posters": {"original": poster_url},
                "title": "Songkran Beats",
                "description": None,
                "description_en": "Water festival",
                "location_name": "Impact Arena",
                "display_icon": None,
                "display_location_name": "Impact Arena",
                "created_at": timezone.localtime(event.created_at).isoformat(),
                "updated_at": timezone.localtime(event.updated_at).isoformat(),
                "start_at": timezone.localtime(start).isoformat(),
                "end_at": timezone.localtime(start + timedelta(hours=5)).isoformat(),
            }
        ],
        "count": 1,
        "total": 1,
        "page": 1,
        "per_page": 10,
    }
    assert body["events"][0]["start_at"].endswith("+07:00")


def test_events_list_status_filter_uses_the_status_clients_see(app_client, organizer, events_url):
    now = timezone.now()
    upcoming = EventFactory(organizer=organizer, status=Event.Status.ACTIVE)
    over = EventFactory(
        organizer=organizer,
        status=Event.Status.ACTIVE,
        start_at=now - timedelta(days=2),
        end_at=now - timedelta(days=1),
    )
    ended = EventFactory(organizer=organizer, status=Event.Status.ENDED)
    draft = EventFactory(organizer=organizer, status=Event.Status.DRAFT)

    assert ids(app_client.get(events_url, {"status": "active"}), "events") == [upcoming.id]
    assert ids(app_client.get(events_url, {"status": "ended"}), "events") == [over.id, ended.id]
    assert ids(app_client.get(events_url, {"status": "draft, active"}), "events") == [
        upcoming.id,
        draft.id,
    ]
    blank = app_client.get(events_url, {"status": ""})
    assert blank.status_code == 400
    assert blank.json()["error"] == "invalid_parameters"
    assert list(blank.json()["fields"]) == ["status"]
    listed = app_client.get(events_url, {"status": "ended"}).json()["events"]
    assert [e["status"] for e in listed] == ["ended", "ended"]


@pytest.mark.parametrize(
    "value, message",
    [
        ("live", "Unknown value 'live'. Allowed: draft, active, ended."),
        ("active,,draft", "Empty item in the comma-separated list."),
        ("ACTIVE", "Unknown value 'ACTIVE'. Allowed: draft, active, ended."),
    ],
)
def test_events_list_rejects_unknown_status(app_client, events_url, value, message):
    response = app_client.get(events_url, {"status": value})
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "invalid_parameters",
        "message": f"Parameter 'status': {message}",
        "fields": {"status": [message]},
    }


def test_events_list_q_text_searches_title_and_location(app_client, organizer, events_url):
    by_title = EventFactory(organizer=organizer, title="Chiang Mai JAZZ night", location_name="")
    by_place = EventFactory(organizer=organizer, title="Rock", location_name="Jazz Club Bangkok")
    EventFactory(organizer=organizer, title="Rock", location_name="Impact")

    response = app_client.get(events_url, {"q": "jazz"})

    assert ids(response, "events") == [by_title.id, by_place.id]


def test_events_list_q_json_filters_exactly(app_client, organizer, events_url):
    first = EventFactory(organizer=organizer, status=Event.Status.DRAFT)
    EventFactory(organizer=organizer, status=Event.Status.ACTIVE)

    assert ids(app_client.get(events_url, {"q": '{"status": "draft"}'}), "events") == [first.id]
    assert ids(app_client.get(events_url, {"q": f'{{"id": {first.id}}}'}), "events") == [first.id]
    assert ids(app_client.get(events_url, {"q": f'{{"id": "{first.id}"}}'}), "events") == [first.id]


@pytest.mark.parametrize(
    "q, message",
    [
        (
            '{"colour": "red"}',
            "Unknown filter key 'colour'. Allowed: id, status, title, location_name.",
        ),
        ("{not json", "Not a valid JSON object."),
        ("[1]", None),
        (
            '{"status": "live"}',
            "Filter 'status': Select a valid choice. live is not one of the available choices.",
        ),
        (
            '{"id": 2147483648}',
            "Filter 'id': Ensure this value is less than or equal to 2147483647.",
        ),
        ('{"id": true}', "Filter 'id' takes a single string or integer."),
        ('{"id": [1]}', "Filter 'id' takes a single string or integer."),
        ("x" * 201, "Ensure this value has at most 200 characters (it has 201)."),
    ],
)
def test_events_list_rejects_bad_q(app_client, events_url, q, message):
    response = app_client.get(events_url, {"q": q})
    if message is None:  # not starting with "{": plain search text, which matches nothing
        assert response.status_code == 200
        assert response.json()["total"] == 0
        return
    assert response.status_code == 400
    assert response.json()["fields"] == {"q": [message]}
    assert response.json()["error"] == "invalid_parameters"


@pytest.mark.parametrize("field", ["id", "created_at", "updated_at", "start_at", "end_at"])
def test_events_list_orders_by_each_field_both_ways(app_client, organizer, events_url, field):
    now = timezone.now()
    a, b, c = (EventFactory(organizer=organizer) for _ in range(3))
    # b and c tie on the key, so they order by id in the same direction.
    values = {
        a.id: now + timedelta(days=3),
        b.id: now + timedelta(days=1),
        c.id: now + timedelta(days=1),
    }
    for pk, value in values.items():
        times = {"start_at": value, "end_at": value + timedelta(hours=1)}
        if field in ("created_at", "updated_at"):
            times = {field: value}
        set_times(Event, pk, **times)

    ascending = ids(app_client.get(events_url, {"order_by": field, "order": "asc"}), "events")
    descending = ids(app_client.get(events_url, {"order_by": field, "order": "desc"}), "events")

    if field == "id":
        assert ascending == [a.id, b.id, c.id]
        assert descending == [c.id, b.id, a.id]
    else:
        assert ascending == [b.id, c.id, a.id]
        assert descending == [a.id, c.id, b.id]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"order_by": "title"}, "order_by"),
        ({"order_by": "ID"}, "order_by"),
        ({"order": "up"}, "order"),
        ({"per_page": "0"}, "per_page"),
        ({"per_page": "101"}, "per_page"),
        ({"per_page": "abc"}, "per_page"),
        ({"page": "0"}, "page"),
        ({"page": "-1"}, "page"),
        ({"page": "2147483648"}, "page"),
    ],
)
def test_events_list_rejects_bad_list_parameters(app_client, events_url, params, field):
    response = app_client.get(events_url, params)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_parameters"
    assert list(body["fields"]) == [field]
    assert body["message"].startswith(f"Parameter '{field}'")


def test_events_list_paginates(app_client, organizer, events_url):
    events = [EventFactory(organizer=organizer) for _ in range(5)]

    second = app_client.get(events_url, {"per_page": 2, "page": 2}).json()
    past_end = app_client.get(events_url, {"per_page": 2, "page": 4}).json()

    assert [e["id"] for e in second["events"]] == [events[2].id, events[3].id]
    assert {k: second[k] for k in ("count", "total", "page", "per_page")} == {
        "count": 2,
        "total": 5,
        "page": 2,
        "per_page": 2,
    }
    assert past_end == {
        "success": True,
        "events": [],
        "count": 0,
        "total": 5,
        "page": 4,
        "per_page": 2,
    }


def test_events_list_needs_an_organizer_token(
    api_client, buyer_client, other_application, organizer, events_url
):
    assert api_client.get(events_url).status_code == 401
    response = buyer_client.get(events_url)  # user token with scope public only
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    other = TokenClient(mint_token(application=other_application))
    assert other.get(events_url).json()["error"] == "application_not_owned"


def test_event_detail_returns_event_and_every_ticket_type(app_client, organizer, event):
    regular = TicketTypeFactory(event=event, name="Regular", price=150000, quantity=3, position=1)
    vip = TicketTypeFactory(event=event, name="VIP", price=500000, quantity=1, position=0)
    hidden = TicketTypeFactory(
        event=event, name="Staff", price=0, quantity=5, status="hidden", position=2
    )
    TicketFactory(event=event, ticket_type=regular)
    TicketFactory(event=event, ticket_type=regular, status="revoked")  # frees its place
    TicketFactory(event=event, ticket_type=vip)

    response = app_client.get(f"/api/public/organizers/{organizer.id}/events/{event.id}")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"success", "event", "ticket_types"}
    assert body["success"] is True
    assert body["event"]["id"] == event.id
    assert body["event"]["title"] == "Songkran Beats"
    assert body["ticket_types"] == [
        {
            "id": vip.id,
            "name": "VIP",
            "price": 500000,
            "quantity": 1,
            "sold_tickets_count": 1,
            "status": "sold_out",
        },
        {
            "id": regular.id,
            "name": "Regular",
            "price": 150000,
            "quantity": 3,
            "sold_tickets_count": 1,
            "status": "on_sale",
        },
        {
            "id": hidden.id,
            "name": "Staff",
            "price": 0,
            "quantity": 5,
            "sold_tickets_count": 0,
            "status": "hidden",
        },
    ]


def test_event_detail_of_another_organizer_is_not_found(app_client, organizer, other_organizer):
    foreign = EventFactory(organizer=other_organizer)
    for path in ("", "/check_in_types", "/tickets", "/tickets/search?ticket_id=1"):
        response = app_client.get(
            f"/api/public/organizers/{organizer.id}/events/{foreign.id}{path}"
        )
        assert response.status_code == 404, path
        assert response.json() == {
            "success": False,
            "error": "not_found",
            "message": "Event not found.",
        }
    missing = app_client.get(f"/api/public/organizers/{organizer.id}/events/2147483647")
    assert missing.status_code == 404
    too_big = app_client.get(f"/api/public/organizers/{organizer.id}/events/99999999999")
    assert too_big.status_code == 404


@pytest.mark.parametrize("event_id", [2147483648, 99999999999, 2**63, 2**64])
@pytest.mark.parametrize(
    "path", ["", "/tickets", "/tickets/search?ticket_id=1", "/tickets/search?reference_code=AB12"]
)
def test_an_event_id_no_event_can_have_is_not_found(app_client, organizer, event_id, path):
    response = app_client.get(f"/api/public/organizers/{organizer.id}/events/{event_id}{path}")
    assert response.status_code == 404
    assert response.json()["message"] == "Event not found."


def test_event_detail_accepts_a_member_user_token(organizer_client, organizer, event):
    response = organizer_client.get(f"/api/public/organizers/{organizer.id}/events/{event.id}")
    assert response.status_code == 200
    assert response.json()["event"]["id"] == event.id


def test_check_in_types_in_position_order_with_ticket_type_ids(app_client, organizer, event):
    regular = TicketTypeFactory(event=event)
    vip = TicketTypeFactory(event=event)
    lounge = CheckInTypeFactory(
        event=event, name="VIP lounge", position=2, ticket_types=[vip, regular]
    )
    day1 = CheckInTypeFactory(event=event, name="Day 1", position=0)
    day2 = CheckInTypeFactory(event=event, name="Day 2", position=1)
    CheckInTypeFactory(name="Elsewhere")

    response = app_client.get(
        f"/api/public/organizers/{organizer.id}/events/{event.id}/check_in_types"
    )

    assert response.status_code == 200
    body = response.json()
    assert [c["id"] for c in body["check_in_types"]] == [day1.id, day2.id, lounge.id]
    lounge.refresh_from_db()
    assert body["check_in_types"][2] == {
        "id": lounge.id,
        "name": "VIP lounge",
        "event_id": event.id,
        "ticket_type_ids": sorted([regular.id, vip.id]),
        "position": 2,
        "created_at": timezone.localtime(lounge.created_at).isoformat(),
        "updated_at": timezone.localtime(lounge.updated_at).isoformat(),
    }
    assert body["check_in_types"][0]["ticket_type_ids"] == []
    assert body["success"] is True


def test_platform_application_user_token_reads_events(
    platform_application, member, organizer, event
):
    client = TokenClient(
        mint_token(application=platform_application, user=member, scope="public organizer")
    )
    assert client.get(f"/api/public/organizers/{organizer.id}/events").status_code == 200


def test_application_token_of_other_org_on_detail(organizer, event):
    other_app = ApplicationFactory()
    client = TokenClient(mint_token(application=other_app))
    response = client.get(f"/api/public/organizers/{organizer.id}/events/{event.id}")
    assert response.status_code == 403
    assert response.json()["error"] == "application_not_owned"

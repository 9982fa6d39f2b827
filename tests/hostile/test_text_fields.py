"""SQL and HTML in every text field: stored and returned verbatim, escaped in the admin.

The API is JSON: it must neither interpret nor mangle what it was given. Escaping is the job of
whatever renders HTML, here the admin.
"""

import pytest

from checkin.models import CheckInLog
from events.models import Event
from tests.factories import TicketFactory, UserFactory
from tests.hostile.helpers import contract_error
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

SQL = "Robert'); DROP TABLE tickets_ticket;--"
HTML = '<script>alert("x")</script><img src=x onerror=alert(1)>'
QUOTES = "O'Brien \"the\" `tick` \\ back; -- /* c */ %_ ' OR '1'='1"
# Up to 3 marks on a letter: a name. Direction overrides (U+202E) and taller stacks are refused
# as names (tests/write_api/test_inputs.py).
UNICODE = "ชื่อ 名前 evil 🎟️ Zalgo z̸̢͎a̷"
SAMPLES = [SQL, HTML, QUOTES, UNICODE]


@pytest.mark.parametrize("text", SAMPLES)
def test_holder_names_and_external_id_round_trip_verbatim(
    organizer_client, event_path, ticket_type, text
):
    response = organizer_client.post(
        f"{event_path}/tickets",
        {
            "ticket_type_id": ticket_type.id,
            "firstname": text,
            "lastname": text[::-1],
            "email": "o'brien+tag@example.com",
            "phone": "0812345678",
            "external_id": text[:64],
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    returned = response.json()["ticket"]
    expected = {
        "firstname": text.strip(),
        "lastname": text[::-1].strip(),
        "email": "o'brien+tag@example.com",
        "external_id": text[:64].strip(),
    }
    assert {key: returned[key] for key in expected} == expected
    stored = Ticket.objects.get(id=returned["id"])
    assert {key: getattr(stored, key) for key in expected} == expected

    # Read back through the list, searching for the very text: found, and only that ticket.
    listed = organizer_client.get(f"{event_path}/tickets", {"q": text.strip()[:40]}).json()
    assert [t["id"] for t in listed["tickets"]] == [stored.id]
    assert listed["tickets"][0]["firstname"] == text.strip()
    assert Ticket.objects.count() == 1  # the table is still there, with what it had


@pytest.mark.parametrize("text", SAMPLES)
def test_gate_note_nfc_uid_and_revoke_reason_are_stored_verbatim(
    organizer_client, event_path, event, ticket_type, text
):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, reference_code="NOTE0001")
    checkin = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        {"note": text, "nfc_uid": text[:64]},
        format="json",
    )
    assert checkin.status_code == 200, checkin.content
    log = CheckInLog.objects.get(ticket=ticket)
    assert (log.note, log.nfc_uid) == (text, text[:64].strip() or None)

    renew = organizer_client.post(f"{event_path}/tickets/{ticket.id}/renew", format="json")
    assert renew.status_code == 200, renew.content
    revoke = organizer_client.post(
        f"{event_path}/tickets/invalidate", {"ticket_id": ticket.id, "reason": text}, format="json"
    )
    assert revoke.status_code == 200, revoke.content
    assert revoke.json()["ticket"]["revoke_note"] == text.strip()
    ticket.refresh_from_db()
    assert ticket.revoke_note == text.strip()


@pytest.mark.parametrize("needle", ["%", "_", "' OR '1'='1", "%' OR 1=1 --", "\\", "*"])
def test_search_wildcards_and_sql_match_only_literally(
    organizer_client, event_path, event, ticket_type, needle
):
    plain = TicketFactory(event=event, ticket_type=ticket_type, firstname="Plain")
    literal = TicketFactory(event=event, ticket_type=ticket_type, firstname=f"Has {needle} in it")
    response = organizer_client.get(f"{event_path}/tickets", {"q": needle})
    assert response.status_code == 200
    assert [t["id"] for t in response.json()["tickets"]] == [literal.id]
    assert plain.id != literal.id


@pytest.mark.parametrize("text", [SQL, HTML])
def test_event_text_from_the_admin_is_returned_verbatim(organizer_client, event, text):
    Event.objects.filter(pk=event.pk).update(title=text, location_name=text, description=text)
    response = organizer_client.get(
        f"/api/public/organizers/{event.organizer_id}/events/{event.id}"
    )
    assert response.status_code == 200
    returned = response.json()["event"]
    assert (returned["title"], returned["location_name"], returned["description"]) == (
        text,
        text,
        text,
    )


@pytest.mark.parametrize("field", ["firstname", "lastname", "email", "phone"])
def test_sql_or_overlong_values_in_validated_fields_are_400(
    organizer_client, event_path, ticket_type, field, unchanged
):
    before = unchanged()
    data = {
        "ticket_type_id": ticket_type.id,
        "firstname": "A",
        "lastname": "B",
        "email": "a@example.com",
        "phone": "0812345678",
    }
    data[field] = {"firstname": "x" * 151, "lastname": "y" * 151}.get(field, SQL)
    body = contract_error(organizer_client.post(f"{event_path}/tickets", data), 400)
    assert field in body["fields"]
    assert unchanged() == before


def test_admin_escapes_hostile_text(client, event, ticket_type):
    ticket = TicketFactory(
        event=event,
        ticket_type=ticket_type,
        firstname=HTML,
        lastname=SQL,
        reference_code="ADMIN001",
        status="used",
    )
    CheckInLog.objects.create(ticket=ticket, action="check_in", at=ticket.used_at, note=HTML)
    Event.objects.filter(pk=event.pk).update(title=HTML)
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    pages = [
        f"/admin/tickets/ticket/{ticket.pk}/change/",
        "/admin/tickets/ticket/",
        "/admin/checkin/checkinlog/",
        f"/admin/events/event/{event.pk}/change/",
        "/admin/events/event/",
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert "<script>alert(" not in html, page
        assert "<img src=x onerror" not in html, page
        assert "&lt;script&gt;alert(" in html, page

"""Array inputs in every encoding of CONTRACT §1, through the field and through HTTP."""

import re
from urllib.parse import urlencode

import pytest
from django.http import QueryDict
from rest_framework import serializers

from checkin.models import TicketCheckIn
from tests.factories import CheckInTypeFactory
from ticketing.api.fields import IdListField
from tickets.inputs import TicketCreateInputSerializer

from .helpers import checkin_url, client_for, db_state, tickets_url


class _Ids(serializers.Serializer):
    ids = IdListField(required=False, allow_null=True, max_items=5)


def _parse(data):
    serializer = _Ids(data=data)
    valid = serializer.is_valid()
    return serializer.validated_data.get("ids") if valid else serializer.errors


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"ids": [1, 2]}, [1, 2]),
        ({"ids": ["1", " 2 "]}, [1, 2]),
        ({"ids": "1,2"}, [1, 2]),
        ({"ids": " 1 , 2 ,"}, [1, 2]),
        ({"ids": "[1,2]"}, [1, 2]),
        ({"ids": '["1", 2]'}, [1, 2]),
        ({"ids": 7}, [7]),
        ({"ids": "7"}, [7]),
        ({"ids": ""}, []),
        ({"ids": []}, []),
        ({"ids": "[]"}, []),
        ({"ids": None}, None),
        ({"ids": [3, 1, 3]}, [3, 1, 3]),  # order and repeats are the client's
        ({"ids": [2147483647]}, [2147483647]),
        (QueryDict("ids=1&ids=2"), [1, 2]),
        (QueryDict("ids%5B%5D=1&ids%5B%5D=2"), [1, 2]),
        (QueryDict("ids=1,2"), [1, 2]),
        (QueryDict("ids=%5B1,2%5D"), [1, 2]),
        (QueryDict("ids=1,2&ids=3"), [1, 2, 3]),
    ],
)
def test_id_list_field_accepts_every_contract_encoding(data, expected):
    assert _parse(data) == expected


def test_id_list_field_absent_is_absent():
    assert _parse({}) is None
    assert _parse(QueryDict("other=1")) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([2147483648], "Ids are whole numbers from 1 to 2147483647."),
        ("2147483648", "Ids are whole numbers from 1 to 2147483647."),
        ([0], "Ids are whole numbers from 1 to 2147483647."),
        ("-5", "Ids are whole numbers from 1 to 2147483647."),
        ("9" * 30, 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ("1,abc", 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ("[1,", 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ('{"a": 1}', 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ("[[1]]", 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ([[1]], 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ([1.5], 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ([True], 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        (True, 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ({"a": 1}, 'Expected a list of ids: [1, 2], "1,2" or repeated keys.'),
        ([1, 2, 3, 4, 5, 6], "At most 5 ids."),
    ],
)
def test_id_list_field_rejects_garbage_and_ids_outside_int32(value, message):
    assert _parse({"ids": value}) == {"ids": [message]}


# --- Through HTTP: the gate accepts every encoding in every body type ------------------------


@pytest.fixture
def types(event):
    return [CheckInTypeFactory(event=event, position=n) for n in (1, 2)]


def _form(pairs) -> str:
    return urlencode(pairs)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "encode",
    ["json-array", "repeated", "rails", "comma", "json-in-form", "multipart", "json-string"],
)
def test_check_in_type_ids_every_encoding_admits_both_types(user_token, ticket, types, encode):
    client = client_for(user_token)
    a, b = (t.id for t in types)
    url = checkin_url(ticket)
    form = "application/x-www-form-urlencoded"
    if encode == "json-array":
        response = client.post(url, {"check_in_type_ids": [a, b]}, format="json")
    elif encode == "json-string":
        response = client.post(url, {"check_in_type_ids": f"{a},{b}"}, format="json")
    elif encode == "repeated":
        body = _form([("check_in_type_ids", a), ("check_in_type_ids", b)])
        response = client.post(url, body, content_type=form)
    elif encode == "rails":
        body = _form([("check_in_type_ids[]", a), ("check_in_type_ids[]", b)])
        response = client.post(url, body, content_type=form)
    elif encode == "comma":
        response = client.post(url, _form([("check_in_type_ids", f"{a},{b}")]), content_type=form)
    elif encode == "json-in-form":
        response = client.post(url, _form([("check_in_type_ids", f"[{a},{b}]")]), content_type=form)
    else:
        response = client.post(url, {"check_in_type_ids": [a, b]}, format="multipart")
    assert response.status_code == 200, response.json()
    assert [r["check_in_type_id"] for r in response.json()["check_in_results"]] == [a, b]
    assert TicketCheckIn.objects.filter(ticket=ticket).count() == 2


@pytest.mark.django_db
def test_check_in_type_ids_outside_int32_is_400(user_token, ticket, types):
    response = client_for(user_token).post(
        checkin_url(ticket), {"check_in_type_ids": [types[0].id, 2**31]}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "check_in_type_ids": ["Ids are whole numbers from 1 to 2147483647."]
    }
    assert TicketCheckIn.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    ["[1, 2]", '"just a string"', "null", "{bad json"],
    ids=["array-body", "string-body", "null-body", "malformed"],
)
def test_check_in_non_object_json_body_is_400(user_token, ticket, body):
    response = client_for(user_token).post(
        checkin_url(ticket), body, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"
    ticket.refresh_from_db()
    assert ticket.status == "active"


@pytest.mark.django_db
def test_check_in_note_and_nfc_uid_length_limits(user_token, ticket):
    client = client_for(user_token)
    response = client.post(checkin_url(ticket), {"note": "n" * 1001, "nfc_uid": "x" * 65})
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"note", "nfc_uid"}


@pytest.mark.parametrize("note", [0, 1.5, True, ["x"], {"a": 1}])
def test_json_text_fields_must_be_text(organizer_client, ticket, note):
    """The schema says string: a JSON number or boolean is refused, not turned into "0"."""
    before = db_state(ticket.event)
    response = organizer_client.post(checkin_url(ticket), {"note": note}, format="json")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"
    assert list(response.json()["fields"]) == ["note"]
    assert db_state(ticket.event) == before


def test_ticket_create_refuses_a_number_for_a_name(organizer_client, event, ticket_type):
    before = db_state(event)
    response = organizer_client.post(
        tickets_url(event),
        {
            "ticket_type_id": ticket_type.id,
            "firstname": 123,
            "lastname": "Jaidee",
            "email": "somsak@example.com",
            "phone": "0812345678",
        },
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["fields"] == {"firstname": ["Not a valid string."]}
    assert db_state(event) == before


# --- Names: one line of printable text --------------------------------------------------------

_NAME_REFUSED = "Must not contain control, invisible or text-direction characters, or line breaks."
_NAME_BREAKERS = ["\r", "\n", "\t", "\x00", "\x1b", "\x7f", "\x85", "\x9f", "\u2028", "\u2029"]
# What draws over the text around a name: direction overrides, embeddings and isolates, and
# characters that hide in it.
_NAME_DISGUISES = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\u061c", "\ufeff",
]  # fmt: skip


@pytest.mark.parametrize("breaker", _NAME_BREAKERS, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("field", ["firstname", "lastname"])
def test_ticket_create_refuses_control_characters_in_a_name(
    organizer_client, event, ticket_type, field, breaker
):
    """A name is printed as one line of the email, the CSV export and the check-in page."""
    before = db_state(event)
    body = {
        "ticket_type_id": ticket_type.id,
        "firstname": "Somsak",
        "lastname": "Jaidee",
        "email": "somsak@example.com",
        "phone": "0812345678",
        field: f"Evil{breaker}Bcc: x@evil.example",
    }
    response = organizer_client.post(tickets_url(event), body, format="json")

    assert response.status_code == 400, response.json()
    message = "Null characters are not allowed." if breaker == "\x00" else _NAME_REFUSED
    assert response.json() == {
        "success": False,
        "error": "invalid_parameters",
        "message": f"Parameter '{field}': {message}",
        "fields": {field: [message]},
    }
    assert db_state(event) == before


@pytest.mark.parametrize("disguise", _NAME_DISGUISES, ids=lambda c: f"U+{ord(c):04X}")
def test_ticket_create_refuses_invisible_and_direction_characters_in_a_name(
    organizer_client, event, ticket_type, disguise
):
    before = db_state(event)
    body = {
        "ticket_type_id": ticket_type.id,
        "firstname": f"Som{disguise}sak",
        "lastname": "Jaidee",
        "email": "somsak@example.com",
        "phone": "0812345678",
    }
    response = organizer_client.post(tickets_url(event), body, format="json")

    assert response.status_code == 400
    assert response.json()["fields"] == {"firstname": [_NAME_REFUSED]}
    assert db_state(event) == before


def test_ticket_create_refuses_a_stack_of_more_than_three_marks(
    organizer_client, event, ticket_type
):
    """Zalgo text: marks stacked on one letter draw over the lines above and below it."""
    before = db_state(event)
    body = {
        "ticket_type_id": ticket_type.id,
        "firstname": "Z\u0351\u0361\u0353\u0315alee",
        "lastname": "Jaidee",
        "email": "somsak@example.com",
        "phone": "0812345678",
    }
    response = organizer_client.post(tickets_url(event), body, format="json")

    assert response.status_code == 400
    assert response.json()["fields"] == {
        "firstname": ["Must not stack more than 3 marks on one letter."]
    }
    assert db_state(event) == before


def test_ticket_create_refuses_a_line_break_in_a_form_body(organizer_client, event, ticket_type):
    before = db_state(event)
    body = urlencode(
        {
            "ticket_type_id": ticket_type.id,
            "firstname": "Evil\r\nBcc: x@evil.example",
            "lastname": "Jaidee",
            "email": "somsak@example.com",
            "phone": "0812345678",
        }
    )
    response = organizer_client.post(
        tickets_url(event), body, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 400
    assert response.json()["fields"] == {"firstname": [_NAME_REFUSED]}
    assert db_state(event) == before


@pytest.mark.parametrize(
    ("firstname", "lastname"),
    [
        ("สมชาย", "ใจดี"),
        ("Zoë", "O'Neil-Smith Jr."),
        ("Anne Marie", "Nguyễn Văn"),
        ("กั๊ก", "น้ำ"),  # a Thai syllable's vowel and tone mark on one consonant
        ("Ḗmile", "Ð\u0301\u0323\u0300uy"),  # three marks on a letter: still a name
    ],
)
def test_ticket_create_keeps_names_of_any_script(
    organizer_client, event, ticket_type, firstname, lastname
):
    body = {
        "ticket_type_id": ticket_type.id,
        "firstname": firstname,
        "lastname": lastname,
        "email": "somsak@example.com",
        "phone": "0812345678",
    }
    response = organizer_client.post(tickets_url(event), body, format="json")

    assert response.status_code == 200, response.json()
    ticket = response.json()["ticket"]
    assert (ticket["firstname"], ticket["lastname"]) == (firstname, lastname)


@pytest.mark.parametrize(
    "breaker", _NAME_BREAKERS + _NAME_DISGUISES, ids=lambda c: f"U+{ord(c):04X}"
)
def test_the_documented_name_pattern_refuses_what_the_api_refuses(breaker):
    """Generated clients and schema-driven tests read the rule from the document."""
    pattern = re.compile(
        TicketCreateInputSerializer.openapi_rules["properties"]["firstname"]["pattern"]
    )
    assert pattern.fullmatch(f"Evil{breaker}Bcc") is None
    assert pattern.fullmatch("Zoë O'Neil-Smith") and pattern.fullmatch("สมชาย")
    assert pattern.fullmatch("   ") is None

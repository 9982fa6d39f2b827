"""Invalid UTF-8 and NUL bytes in the path, the query, the body and headers."""

import pytest

from tests.hostile.helpers import contract_error

pytestmark = pytest.mark.django_db

BROKEN_UTF8 = ["%ff", "%c3%28", "%ed%a0%80", "%f8%88%80%80%80", "%e2%82"]


@pytest.mark.parametrize("broken", BROKEN_UTF8)
def test_invalid_utf8_in_search_query_finds_nothing(organizer_client, event_path, ticket, broken):
    """Django decodes the query with replacement characters; no ticket code holds U+FFFD."""
    response = organizer_client.get(f"{event_path}/tickets?q={broken}")
    assert response.status_code == 200
    assert response.json()["total"] == 0
    response = organizer_client.get(f"{event_path}/tickets/search?reference_code=ABC{broken}DEF")
    contract_error(response, 404, "not_found")


@pytest.mark.parametrize("broken", BROKEN_UTF8)
def test_invalid_utf8_in_the_path_is_404(organizer_client, event_path, broken):
    contract_error(organizer_client.get(f"{event_path}/tickets/{broken}/checkin"), 404)
    contract_error(organizer_client.get(f"/api/public/{broken}"), 404, "not_found")


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"caf\xc3", b"\xc0\xaf", b"\xed\xa0\x80"])
def test_invalid_utf8_in_json_body_is_400(organizer_client, event_path, ticket, raw, unchanged):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        data=b'{"note": "' + raw + b'"}',
        content_type="application/json",
    )
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        # Percent-escapes are decoded as UTF-8, broken sequences becoming U+FFFD ...
        (b"%ff%fe", "\ufffd\ufffd"),
        (b"caf%c3", "caf\ufffd"),
        # ... raw bytes outside escapes are read as Latin-1, as Django reads every form body.
        (b"\xff\xfe", "\xff\xfe"),
        (b"caf\xc3", "caf\xc3"),
    ],
)
def test_invalid_utf8_in_form_body_is_stored_as_decoded(
    organizer_client, event_path, ticket, raw, stored
):
    from checkin.models import CheckInLog

    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin",
        data=b"note=" + raw,
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert list(CheckInLog.objects.filter(ticket=ticket).values_list("note", flat=True)) == [stored]


def test_nul_byte_in_text_input_is_400(organizer_client, event_path, ticket_type, unchanged):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets",
        {
            "ticket_type_id": ticket_type.id,
            "firstname": "Nul\x00Byte",
            "lastname": "B",
            "email": "nul@example.com",
            "phone": "0812345678",
        },
        format="json",
    )
    body = contract_error(response, 400, "invalid_parameters")
    assert "firstname" in body["fields"]
    assert unchanged() == before


def test_nul_byte_in_a_check_in_note_is_400(organizer_client, event_path, ticket, unchanged):
    before = unchanged()
    response = organizer_client.post(
        f"{event_path}/tickets/{ticket.id}/checkin", {"note": "a\x00b"}, format="json"
    )
    body = contract_error(response, 400, "invalid_parameters")
    assert "note" in body["fields"]
    assert unchanged() == before


@pytest.mark.parametrize("param", ["q", "email", "phone"])
def test_nul_byte_in_a_search_query_is_400(organizer_client, event_path, ticket, param):
    """PostgreSQL cannot even compare text holding NUL; the filters refuse it on any database."""
    response = organizer_client.get(f"{event_path}/tickets?{param}=ab%00cd")
    body = contract_error(response, 400, "invalid_parameters")
    assert param in body["fields"]


def test_nul_byte_in_reference_code_search_is_400(organizer_client, event_path, ticket):
    response = organizer_client.get(f"{event_path}/tickets/search?reference_code=HOSTILE01%00")
    body = contract_error(response, 400, "invalid_parameters")
    assert body["fields"] == {"reference_code": ["Null characters are not allowed."]}


@pytest.mark.parametrize("token", ["\xff\xfe", "tok\x00en", "é" * 10, "a" * 5000])
def test_odd_bytes_in_the_authorization_header_are_401(api_client, event_path, token):
    response = api_client.get(f"{event_path}/tickets", HTTP_AUTHORIZATION=f"Bearer {token}")
    contract_error(response, 401, "invalid_token")
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'

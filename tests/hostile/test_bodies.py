"""Oversized, overfull and oddly typed bodies: refused with a 400 before anything changes."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import encode_multipart

from checkin.models import CheckInLog
from tests.hostile.helpers import contract_error

pytestmark = pytest.mark.django_db

TEN_MB = 10 * 1024 * 1024


@pytest.fixture
def checkin_path(event_path, ticket):
    return f"{event_path}/tickets/{ticket.id}/checkin"


def test_ten_megabyte_form_body_is_400(organizer_client, checkin_path, ticket, unchanged):
    before = unchanged()
    body = "note=" + "a" * TEN_MB
    response = organizer_client.post(
        checkin_path, data=body, content_type="application/x-www-form-urlencoded"
    )
    body = contract_error(response, 400, "invalid_parameters")
    assert body["message"] == "The request body is too large."
    assert unchanged() == before


def test_ten_megabyte_json_body_is_400(organizer_client, checkin_path, unchanged):
    before = unchanged()
    payload = json.dumps({"note": "a" * TEN_MB})
    response = organizer_client.post(checkin_path, data=payload, content_type="application/json")
    body = contract_error(response, 400, "invalid_parameters")
    assert body["message"] == "The request body is too large."
    assert unchanged() == before


def test_ten_megabyte_json_body_with_token_inside_is_400(api_client, checkin_path, unchanged):
    """The token is looked for in the body before anything else reads it: same refusal."""
    before = unchanged()
    payload = json.dumps({"access_token": "x", "note": "a" * TEN_MB})
    response = api_client.post(checkin_path, data=payload, content_type="application/json")
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


def test_ten_megabyte_multipart_field_is_400(organizer_client, checkin_path, unchanged):
    before = unchanged()
    response = organizer_client.post(checkin_path, data={"note": "a" * TEN_MB}, format="multipart")
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


def test_ten_megabyte_file_upload_is_ignored_by_an_api_without_uploads(
    organizer_client, checkin_path, ticket
):
    """Files are streamed to disk, not memory; no endpoint reads them, so the check-in stands."""
    upload = SimpleUploadedFile("big.bin", b"\0" * TEN_MB, "application/octet-stream")
    response = organizer_client.post(
        checkin_path, data={"note": "with a file", "file": upload}, format="multipart"
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "used"


def test_too_many_form_fields_is_400(organizer_client, checkin_path, unchanged):
    before = unchanged()
    body = "&".join(f"f{n}=1" for n in range(5000))
    response = organizer_client.post(
        checkin_path, data=body, content_type="application/x-www-form-urlencoded"
    )
    body = contract_error(response, 400, "invalid_parameters")
    assert body["message"] == "The request has too many fields."
    assert unchanged() == before


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/xml", "application/octet-stream", "image/png"]
)
def test_unsupported_body_type_is_400(organizer_client, checkin_path, content_type, unchanged):
    before = unchanged()
    response = organizer_client.post(checkin_path, data=b"<x/>", content_type=content_type)
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


@pytest.mark.parametrize(
    "payload", [b"{", b"[1,", b'{"note": "a"', b"\xef\xbb\xbf{}", b"null", b"[]", b'"note"', b"1"]
)
def test_malformed_or_non_object_json_is_400(organizer_client, checkin_path, payload, unchanged):
    before = unchanged()
    response = organizer_client.post(checkin_path, data=payload, content_type="application/json")
    contract_error(response, 400, "invalid_parameters")
    assert unchanged() == before


def test_json_accept_header_we_do_not_speak_still_gets_json(organizer_client, event_path):
    response = organizer_client.get(f"{event_path}/tickets", HTTP_ACCEPT="application/xml")
    contract_error(response, 400, "invalid_parameters")


def test_truncated_multipart_reads_as_an_empty_form(organizer_client, checkin_path, ticket):
    """The body stops inside the first part's headers: no field arrived, and every check-in
    input is optional, so this is a plain check-in with no note."""
    body = encode_multipart("BoUnDaRy", {"note": "x"})[:-20]
    response = organizer_client.post(
        checkin_path, data=body, content_type="multipart/form-data; boundary=BoUnDaRy"
    )
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "used"
    assert list(CheckInLog.objects.filter(ticket=ticket).values_list("note", flat=True)) == [""]

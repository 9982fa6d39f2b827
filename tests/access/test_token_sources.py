"""Where a token may travel (spec, Using a token) and what a malformed one gets: a 401."""

import json

import pytest
from rest_framework.test import APIClient

from tests.factories import TicketFactory
from tests.support import mint_token
from tickets.models import Ticket

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkin_path(organizer, event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    return ticket, (
        f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets/{ticket.id}/checkin"
    )


@pytest.fixture
def token(application):
    return mint_token(application=application)


def test_get_with_query_parameter(api_client, token):
    assert api_client.get(f"/api/public/organizers?access_token={token}").status_code == 200


def test_post_with_form_body(api_client, token, checkin_path):
    ticket, path = checkin_path
    response = api_client.post(path, {"access_token": token}, format="multipart")
    assert response.status_code == 200, response.json()
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED


def test_post_with_urlencoded_body(api_client, token, checkin_path):
    _ticket, path = checkin_path
    response = api_client.post(
        path, f"access_token={token}", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200, response.json()


def test_post_with_json_body(api_client, token, checkin_path):
    ticket, path = checkin_path
    response = api_client.post(
        path, json.dumps({"access_token": token}), content_type="application/json"
    )
    assert response.status_code == 200, response.json()
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED


def test_invalid_body_token_is_401_with_error_challenge(api_client, checkin_path):
    ticket, path = checkin_path
    response = api_client.post(
        path, json.dumps({"access_token": "forged"}), content_type="application/json"
    )
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.ACTIVE


def test_header_wins_over_query(api_client, token):
    response = api_client.get(
        f"/api/public/organizers?access_token={token}", HTTP_AUTHORIZATION="Bearer forged"
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token abc",
        "Bearer " + "a" * 10_000,
        "Bearer tok\u00e9n",
        "Bearer a b c",
        "Bearer \x00",
    ],
    ids=["empty", "space", "basic", "other-scheme", "huge", "non-ascii", "spaces", "nul"],
)
def test_malformed_authorization_header_is_401(api_client, header):
    response = api_client.get("/api/public/organizers", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"


@pytest.mark.parametrize(
    "query",
    ["access_token=", "access_token=%00", "access_token=%ff%fe", "access_token=" + "x" * 5000],
    ids=["empty", "nul", "bad-utf8", "huge"],
)
def test_malformed_query_token_is_401(api_client, query):
    response = api_client.get(f"/api/public/organizers?{query}")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"


def test_json_body_not_an_object_is_ignored_for_the_token(api_client, token, checkin_path):
    _ticket, path = checkin_path
    response = api_client.post(
        path, json.dumps([token]), content_type="application/json", HTTP_AUTHORIZATION=""
    )
    assert response.status_code == 401


def test_malformed_json_body_is_400(api_client, token, checkin_path):
    _ticket, path = checkin_path
    response = api_client.post(
        path, "{not json", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"


def test_organizer_id_beyond_int32_is_404(app_client):
    response = app_client.get("/api/public/organizers/99999999999999999999/events")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_token_of_deactivated_user_is_401(application, member):
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {mint_token(application=application, user=member)}"
    )
    assert client.get("/api/public/me").status_code == 200
    member.is_active = False
    member.save()
    assert client.get("/api/public/me").status_code == 401

"""The shared API layer: error envelope, token sources, pagination parameters."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import resolve

pytestmark = pytest.mark.django_db


def test_unknown_api_path_is_json_404(api_client):
    response = api_client.get("/api/public/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {
        "success": False,
        "error": "not_found",
        "message": "No such endpoint.",
    }


UNKNOWN = {"success": False, "error": "not_found", "message": "No such endpoint."}


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize(
    "path", ["/api/public/no/such/route", "/api/public/", "/api/public/me/", "/api/public/info/x"]
)
def test_unknown_api_route_is_json_404_whatever_debug_is(api_client, settings, debug, method, path):
    settings.DEBUG = debug  # with DEBUG on, Django's own 404 is its HTML debug page

    response = getattr(api_client, method)(path, {"a": 1}, format="json")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == UNKNOWN


@pytest.mark.parametrize("debug", [True, False])
def test_known_route_with_another_method_is_json_405_whatever_debug_is(api_client, settings, debug):
    settings.DEBUG = debug

    response = api_client.delete("/api/public/info")

    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "success": False,
        "error": "method_not_allowed",
        "message": 'Method "DELETE" not allowed.',
    }
    assert response["Allow"] == "GET, HEAD, OPTIONS"


@pytest.mark.parametrize("debug", [True, False])
def test_api_path_missing_its_trailing_slash_still_redirects(api_client, settings, debug):
    settings.DEBUG = debug

    assert api_client.get("/api/public/docs")["Location"] == "/api/public/docs/"
    assert api_client.get("/api/public/schema?format=json")["Location"] == (
        "/api/public/schema/?format=json"
    )
    assert api_client.get("/api/public")["Location"] == "/api/public/"
    assert api_client.post("/api/public/docs").json() == UNKNOWN


def test_unknown_route_is_not_in_the_openapi_document(api_client):
    document = api_client.get("/api/public/schema/", HTTP_ACCEPT="application/json").json()

    documented = [re.sub(r"{\w+}", "1", path) for path in document["paths"]]
    assert len(documented) > 10
    assert [p for p in documented if resolve(p).url_name == "api-unknown-route"] == []


def test_each_documented_route_is_reached_by_its_own_path_whatever_comes_before_it(api_client):
    # The routes are ordered by traffic, not by app: no route may answer another's paths.
    document = api_client.get("/api/public/schema/", HTTP_ACCEPT="application/json").json()

    for documented in document["paths"]:
        route = re.sub(r"{(\w+)}", r"<int:\1>", documented.removeprefix("/"))
        path = re.sub(r"{\w+}", "7", documented)
        assert resolve(path).route == route, documented


# CONTRACT §2, status by status; a feature's own codes may come on top.
CONTRACT_CODES = {
    400: {"invalid_parameters"},
    401: {"invalid_token", "organizer_mismatch"},
    403: {
        "insufficient_scope",
        "application_not_owned",
        "not_organizer_member",
        "user_token_required",
    },
    404: {"not_found"},
    405: {"method_not_allowed"},
    409: {"duplicate_external_id", "duplicate_reference_code", "duplicate_nfc_uid"},
    422: {
        "quota_exceeded",
        "ticket_revoked",
        "ticket_already_used",
        "ticket_not_used",
        "order_not_paid",
        "event_not_active",
        "check_in_type_required",
    },
    429: {"rate_limited"},
    500: {"server_error"},
    503: {"service_unavailable"},
}


def test_error_codes_come_from_every_apps_exceptions_once_django_has_started():
    """`api_error_codes` (the OpenAPI error components, the hostile tests) reads the exception
    classes; a process that has only started Django, no view imported, knows every app's."""
    script = (
        "import django, json; django.setup();"
        "from ticketing.api.exceptions import api_error_codes;"
        "print(json.dumps(api_error_codes()))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ticketing.settings.test"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    codes = {int(status): set(listed) for status, listed in json.loads(result.stdout).items()}
    for status, expected in CONTRACT_CODES.items():
        assert expected <= codes[status], status
    # Codes only the admin and the commands meet, and the bases of a status, are not the API's.
    unlisted = {"capacity_below_sold", "event_status_conflict", "duplicate_slug", "conflict"}
    assert not unlisted & set().union(*codes.values())
    assert "unprocessable" not in codes[422]

"""The shared API layer: error envelope, token sources, pagination parameters."""

import re

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

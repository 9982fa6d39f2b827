"""API answers carry personal data: no cache may store them, errors included (issue 12)."""

import pytest
from django.db import OperationalError

pytestmark = pytest.mark.django_db


def test_personal_data_is_not_stored(buyer_client):
    response = buyer_client.get("/api/public/me")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"


def test_token_in_the_query_answer_is_not_stored(api_client, buyer_client):
    response = api_client.get(f"/api/public/me?access_token={buyer_client.token}")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "path, status",
    [
        ("/api/public/organizers", 401),  # no token
        ("/api/public/no/such/route", 404),
        ("/api/public/info", 200),
        ("/api/public/schema/", 200),
    ],
)
def test_errors_info_and_schema_are_not_stored(api_client, path, status):
    response = api_client.get(path)
    assert response.status_code == status
    assert response["Cache-Control"] == "no-store"


def test_outage_answer_is_not_stored(app_client, monkeypatch):
    def outage(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("ticketing.api.permissions.caller_of", outage)
    response = app_client.get("/api/public/organizers")
    assert response.status_code == 503
    assert response["Cache-Control"] == "no-store"


def test_rate_limited_answer_is_not_stored(app_client, settings):
    settings.API_RATE_LIMIT = "1/m"
    app_client.get("/api/public/organizers")
    response = app_client.get("/api/public/organizers")
    assert response.status_code == 429
    assert response["Cache-Control"] == "no-store"


def test_swagger_ui_files_keep_their_own_caching(api_client):
    response = api_client.get("/api/public/docs/assets/swagger-ui.css")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=86400"

"""`GET /me` (User at the top level, 10 a minute per user) and `GET /info`."""

import datetime

import pytest
from django.test import override_settings

from accounts.selectors import service_version
from tests.factories import UserFactory
from tests.oauth.flow import stored_token
from tests.oauth.support import wait_for_fresh_window
from tests.support import TokenClient, mint_token
from ticketing.api.throttling import token_rate_key

pytestmark = pytest.mark.django_db


def test_me_returns_the_user_without_wrapper(application):
    user = UserFactory(
        username="nok",
        full_name="Nok Buyer",
        email="nok@example.com",
        phone="+66812345678",
        gender="female",
        birthday=datetime.date(1990, 4, 13),
    )
    client = TokenClient(mint_token(application=application, user=user, scope="public"))
    response = client.get("/api/public/me")
    assert response.status_code == 200
    assert response.json() == {
        "id": user.id,
        "full_name": "Nok Buyer",
        "email": "nok@example.com",
        "avatar": None,
        "avatars": {"original": None},
        "birthday": "1990-04-13",
        "gender": "female",
        "phone": "+66812345678",
    }


def test_me_unset_fields_are_null(application):
    user = UserFactory(full_name="", email="", phone="", gender="")
    client = TokenClient(mint_token(application=application, user=user))
    body = client.get("/api/public/me").json()
    assert body["full_name"] is None
    assert body["email"] is None
    assert body["phone"] is None
    assert body["gender"] is None
    assert body["birthday"] is None


@pytest.mark.parametrize("how", ["header", "query"])
def test_me_accepts_the_token_in_header_and_query(api_client, application, buyer, how):
    token = mint_token(application=application, user=buyer)
    if how == "header":
        response = api_client.get("/api/public/me", HTTP_AUTHORIZATION=f"Bearer {token}")
    else:
        response = api_client.get(f"/api/public/me?access_token={token}")
    assert response.status_code == 200
    assert response.json()["id"] == buyer.id


def test_me_costs_one_query(buyer_client, django_assert_num_queries):
    with django_assert_num_queries(1):  # the token with its user and application
        assert buyer_client.get("/api/public/me").status_code == 200


def test_me_without_token_is_401_with_bare_challenge(api_client):
    response = api_client.get("/api/public/me")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == {
        "success": False,
        "error": "invalid_token",
        "message": "The access token is missing, malformed, expired or revoked.",
    }


def test_me_with_unknown_token_is_401_invalid_token_challenge(api_client):
    response = api_client.get("/api/public/me", HTTP_AUTHORIZATION="Bearer nope")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert response.json()["error"] == "invalid_token"


def test_me_with_application_token_is_user_token_required(app_client):
    response = app_client.get("/api/public/me")
    assert response.status_code == 403
    assert response.json()["error"] == "user_token_required"


def test_me_with_organizer_scope_only_is_insufficient_scope(application, member):
    client = TokenClient(mint_token(application=application, user=member, scope="organizer"))
    response = client.get("/api/public/me")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert response["WWW-Authenticate"] == 'Bearer error="insufficient_scope", scope="public"'


def test_me_rate_limit_is_ten_a_minute_per_user_across_tokens(application, other_application):
    user = UserFactory()
    first = TokenClient(mint_token(application=application, user=user))
    second = TokenClient(mint_token(application=other_application, user=user))
    wait_for_fresh_window(f"user:{user.id}", margin=5)
    statuses = [(first if i % 2 else second).get("/api/public/me").status_code for i in range(10)]
    assert statuses == [200] * 10

    limited = first.get("/api/public/me")
    assert limited.status_code == 429
    assert limited.json()["error"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert limited.json()["message"] == (
        f"Too many requests; try again in {limited['Retry-After']} seconds."
    )
    assert second.get("/api/public/me").status_code == 429

    # Another user is counted on their own.
    other = TokenClient(mint_token(application=application, user=UserFactory()))
    assert other.get("/api/public/me").status_code == 200


def test_me_rate_limit_does_not_count_refused_requests(api_client, buyer_client):
    for _ in range(15):
        assert api_client.get("/api/public/me").status_code == 401
    assert buyer_client.get("/api/public/me").status_code == 200


def test_me_rejects_other_methods(buyer_client):
    response = buyer_client.post("/api/public/me")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


def test_info_needs_no_token_and_no_database(api_client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = api_client.get("/api/public/info")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"success", "name", "version", "status", "time"}
    assert body["success"] is True
    assert body["name"] == "Event Ticketing Public API"
    assert body["status"] == "ok"
    assert body["version"] == service_version() != "unknown"
    now = datetime.datetime.fromisoformat(body["time"])
    assert now.utcoffset() == datetime.timedelta(hours=7)  # site zone, Asia/Bangkok
    assert abs((datetime.datetime.now(datetime.UTC) - now).total_seconds()) < 5


def test_info_ignores_a_bad_token(api_client):
    response = api_client.get("/api/public/info", HTTP_AUTHORIZATION="Bearer expired-or-junk")
    assert response.status_code == 200


@override_settings(API_RATE_LIMIT="2/m")
def test_default_per_token_limit_applies_to_other_endpoints(app_client, buyer_client):
    wait_for_fresh_window(token_rate_key(stored_token(app_client.token)), margin=5)
    assert [app_client.get("/api/public/organizers").status_code for _ in range(2)] == [200, 200]
    limited = app_client.get("/api/public/organizers")
    assert limited.status_code == 429
    assert limited.json()["error"] == "rate_limited"
    assert int(limited["Retry-After"]) >= 1
    assert buyer_client.get("/api/public/organizers").status_code == 200  # per token

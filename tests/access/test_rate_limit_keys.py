"""The API limit counts an application and its user, so a new token brings no new budget."""

import time

import pytest
from django.test import Client, override_settings
from django_ratelimit.core import _get_window

from tests.factories import UserFactory
from tests.oauth.flow import stored_token
from tests.oauth.support import wait_for_fresh_window
from tests.support import TokenClient, mint_token
from ticketing.api.throttling import rate_counter, token_rate_key, window_end

pytestmark = pytest.mark.django_db


def _client_credentials_token(application) -> str:
    response = Client().post(
        "/oauth/token",
        {
            "grant_type": "client_credentials",
            "client_id": application.client_id,
            "client_secret": "s3cret",
        },
    )
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


@override_settings(API_RATE_LIMIT="2/m")
def test_a_new_client_credentials_token_shares_its_applications_budget(
    application, other_application
):
    first = TokenClient(_client_credentials_token(application))
    wait_for_fresh_window(token_rate_key(stored_token(first.token)), margin=5)
    assert [first.get("/api/public/organizers").status_code for _ in range(2)] == [200, 200]

    second = TokenClient(_client_credentials_token(application))
    limited = second.get("/api/public/organizers")
    assert limited.status_code == 429
    assert limited.json()["error"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 60
    # Another application counts on its own.
    other = TokenClient(_client_credentials_token(other_application))
    assert other.get("/api/public/organizers").status_code == 200


@override_settings(API_RATE_LIMIT="2/m")
def test_a_users_new_token_shares_the_budget_and_other_users_keep_theirs(application, member):
    first = TokenClient(mint_token(application=application, user=member))
    wait_for_fresh_window(token_rate_key(stored_token(first.token)), margin=5)
    assert [first.get("/api/public/organizers").status_code for _ in range(2)] == [200, 200]

    second = TokenClient(mint_token(application=application, user=member))
    assert second.get("/api/public/organizers").status_code == 429
    # A user of the same application, and the application's own token, count apart.
    colleague = TokenClient(mint_token(application=application, user=UserFactory()))
    assert colleague.get("/api/public/organizers").status_code == 200
    application_itself = TokenClient(mint_token(application=application))
    assert application_itself.get("/api/public/organizers").status_code == 200


def test_keys_name_the_application_and_the_user(application, member):
    app_token = stored_token(mint_token(application=application))
    user_token = stored_token(mint_token(application=application, user=member))
    assert token_rate_key(app_token) == f"app:{application.pk}:user:-"
    assert token_rate_key(user_token) == f"app:{application.pk}:user:{member.pk}"


def test_windows_are_django_ratelimits(monkeypatch):
    """The API's counters keep django-ratelimit's windows, which `wait_for_fresh_window` reads."""
    monkeypatch.setattr(time, "time", lambda: 1_790_000_123.4)
    for value in ("app:1:user:-", "user:7", "ip:127.0.0.1"):
        for period in (1, 60, 900):
            assert window_end(value, period) == _get_window(value, period)


def test_a_counters_key_is_short_whatever_the_client_sent():
    """A username of any length counts under a key of fixed length, one per username."""
    long_name, other = "x" * 100_000, "x" * 99_999 + "y"

    def key(username: str) -> str:
        return rate_counter(f"failures:user-address:{username}", "10/15m", "10.0.0.1").key

    assert len(key(long_name)) < 60
    assert key(long_name) != key(other)

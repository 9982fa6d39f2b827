"""`POST /oauth/token` for applications, its rate limit, and DOT's revoke and introspect."""

import base64

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from oauth2_provider.models import AccessToken, RefreshToken
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.signals import app_authorized

from oauth_setup.models import Application
from oauth_setup.validators import TicketingOAuth2Validator
from tests.factories import ApplicationFactory
from tests.oauth.flow import browser, consent, exchange_code, refresh, stored_token
from tests.oauth.support import wait_for_fresh_window
from tests.support import TokenClient

pytestmark = pytest.mark.django_db


def client_credentials(application, *, secret="s3cret", **extra):
    return Client().post(
        "/oauth/token",
        {
            "grant_type": "client_credentials",
            "client_id": application.client_id,
            "client_secret": secret,
            **extra,
        },
    )


def test_client_credentials_token_response(application):
    response = client_credentials(application)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope", "created_at"}
    assert (body["token_type"], body["expires_in"], body["scope"]) == ("Bearer", 7200, "public")
    assert isinstance(body["created_at"], int)
    token = stored_token(body["access_token"])
    assert token.user is None and token.application == application
    assert TokenClient(body["access_token"]).get("/api/public/organizers").status_code == 200


def test_client_credentials_with_http_basic(application):
    basic = base64.b64encode(f"{application.client_id}:s3cret".encode()).decode()
    response = Client().post(
        "/oauth/token",
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=f"Basic {basic}",
    )
    assert response.status_code == 200
    assert response.json()["scope"] == "public"


def test_client_credentials_asking_public_explicitly(application):
    assert client_credentials(application, scope="public").json()["scope"] == "public"


@pytest.mark.parametrize("scope", ["organizer", "public organizer"])
def test_client_credentials_with_organizer_scope_is_invalid_scope(application, scope):
    response = client_credentials(application, scope=scope)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_scope"
    assert not AccessToken.objects.exists()


def test_client_credentials_wrong_secret_is_invalid_client(application):
    response = client_credentials(application, secret="guess")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_client_credentials_needs_the_grant_on_the_application(organizer):
    app = ApplicationFactory(organizer=organizer, allow_client_credentials=False)
    response = client_credentials(app)
    assert response.status_code == 400
    assert response.json()["error"] == "unauthorized_client"


def test_client_credentials_only_application_cannot_authorize_users(organizer, member):
    app = ApplicationFactory(
        organizer=organizer,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        allow_client_credentials=False,
    )
    assert client_credentials(app).status_code == 200
    client = Client()
    client.force_login(member)
    answer = client.get(
        f"/oauth/authorize?client_id={app.client_id}&response_type=code"
        "&redirect_uri=http://127.0.0.1:8765/callback"
    )
    assert answer.status_code == 302
    assert "error=unauthorized_client" in answer["Location"]


def test_unsupported_grant_and_get_method(application):
    response = client_credentials(application, grant_type="magic")
    assert response.status_code == 400
    assert response.json()["error"] == "unsupported_grant_type"
    assert Client().get("/oauth/token").status_code == 405


@override_settings(TOKEN_RATE_LIMIT="3/m")
def test_token_endpoint_is_limited_per_client_address(application):
    wait_for_fresh_window("127.0.0.1", margin=5)
    statuses = [client_credentials(application, secret="guess").status_code for _ in range(3)]
    assert statuses == [401, 401, 401]
    limited = client_credentials(application)  # even with the right secret
    assert limited.status_code == 429
    assert limited.json() == {
        "error": "rate_limited",
        "error_description": (
            f"Too many token requests from this address; try again in "
            f"{limited['Retry-After']} seconds."
        ),
    }
    assert 1 <= int(limited["Retry-After"]) <= 60
    # Another address has its own budget.
    other = Client(REMOTE_ADDR="10.0.0.2").post(
        "/oauth/token",
        {
            "grant_type": "client_credentials",
            "client_id": application.client_id,
            "client_secret": "s3cret",
        },
    )
    assert other.status_code == 200


def test_a_client_credentials_token_reads_its_client_and_writes_its_token_only(application):
    client_credentials(application)  # the client's secret already has the preferred hash
    with CaptureQueriesContext(connection) as queries:
        response = client_credentials(application)
    assert response.status_code == 200
    statements = [query["sql"].split()[0] for query in queries.captured_queries]
    # DOT reads the token back only to send `app_authorized`, which nothing here listens to.
    assert [s for s in statements if s in ("SELECT", "INSERT", "UPDATE")] == ["SELECT", "INSERT"]


def test_an_application_by_client_id_is_one_plain_statement(organizer):
    """`Application.objects.get(client_id=...)`, django-oauth-toolkit's lookup of every token
    request's client, runs one plain statement (the same application as the ORM's query: the
    twin test's, tests/statements); none is DoesNotExist; any other lookup is the ORM's own."""
    ApplicationFactory(organizer=organizer)
    application = ApplicationFactory(organizer=organizer, allow_client_credentials=True)
    with CaptureQueriesContext(connection) as queries:
        found = Application.objects.get(client_id=application.client_id)
    assert len(queries.captured_queries) == 1
    assert "oauth_setup_application AS a" in queries.captured_queries[0]["sql"]
    assert type(found) is Application
    assert found.pk == application.pk and found.organizer == organizer
    with pytest.raises(Application.DoesNotExist):
        Application.objects.get(client_id="no-such-client")
    assert Application.objects.get(pk=application.pk) == application
    assert Application.objects.get_by_natural_key(application.client_id) == application


def test_a_listener_of_app_authorized_still_gets_the_new_token(application):
    received = []

    def listener(sender, request, token, **kwargs):
        received.append(token)

    app_authorized.connect(listener)
    try:
        body = client_credentials(application).json()
    finally:
        app_authorized.disconnect(listener)
    assert [token.token_checksum for token in received] == [
        stored_token(body["access_token"]).token_checksum
    ]


def test_token_limit_default_is_thirty_a_minute(settings):
    assert settings.TOKEN_RATE_LIMIT == "30/m"


def test_revoke_token_ends_access(application):
    token = client_credentials(application).json()["access_token"]
    api = TokenClient(token)
    assert api.get("/api/public/organizers").status_code == 200
    revoked = Client().post(
        "/oauth/revoke_token",
        {"token": token, "client_id": application.client_id, "client_secret": "s3cret"},
    )
    assert revoked.status_code == 200
    response = api.get("/api/public/organizers")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"


def test_introspect_with_client_credentials(application, other_application):
    token = client_credentials(application).json()["access_token"]
    basic = base64.b64encode(f"{application.client_id}:s3cret".encode()).decode()
    response = Client().post(
        "/oauth/introspect/", {"token": token}, HTTP_AUTHORIZATION=f"Basic {basic}"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["active"] is True
    assert body["scope"] == "public"
    assert body["client_id"] == application.client_id
    unknown = Client().post(
        "/oauth/introspect", {"token": "nope"}, HTTP_AUTHORIZATION=f"Basic {basic}"
    )
    assert unknown.json() == {"active": False}
    anonymous = Client().post("/oauth/introspect/", {"token": token})
    assert anonymous.status_code == 403


@pytest.mark.parametrize("password", ["password", "wrong"], ids=["right", "wrong"])
@pytest.mark.parametrize(
    "grant_type", ["password", "urn:ietf:params:oauth:grant-type:device_code", "implicit"]
)
def test_grants_not_offered_are_unsupported_whatever_the_credentials(
    application, member, password, grant_type
):
    """No password oracle: the same answer for a right and a wrong password (RFC 9700 §2.4)."""
    response = client_credentials(
        application, grant_type=grant_type, username="staff", password=password
    )
    assert response.status_code == 400
    assert response.json() == {"error": "unsupported_grant_type"}
    assert not AccessToken.objects.exists()


def test_password_grant_of_an_application_registered_for_it_is_unsupported(organizer, member):
    app = ApplicationFactory(
        organizer=organizer, authorization_grant_type=Application.GRANT_PASSWORD
    )
    for password in ["password", "wrong"]:
        response = client_credentials(
            app, grant_type="password", username="staff", password=password
        )
        assert (response.status_code, response.json()) == (
            400,
            {"error": "unsupported_grant_type"},
        )


def test_implicit_grant_is_unsupported_and_issues_nothing(organizer, member):
    app = ApplicationFactory(
        organizer=organizer, authorization_grant_type=Application.GRANT_IMPLICIT
    )
    client = Client()
    client.force_login(member)
    answer = client.get(
        f"/oauth/authorize?client_id={app.client_id}&response_type=token&state=s"
        "&redirect_uri=http://127.0.0.1:8765/callback"
    )
    assert answer.status_code == 302
    location = answer["Location"]
    assert location.startswith("http://127.0.0.1:8765/callback?")
    assert "error=unsupported_response_type" in location
    assert "#" not in location and "access_token" not in location
    assert not AccessToken.objects.exists()


# --- Refresh token reuse (CONTRACT §4) ---------------------------------------------------------


def test_refresh_token_grace_period_is_off_by_default():
    assert oauth2_settings.REFRESH_TOKEN_GRACE_PERIOD_SECONDS == 0


def test_reusing_a_rotated_refresh_token_at_once_revokes_the_family(application, member):
    first = exchange_code(application, consent(browser(member), application)["code"]).json()
    rotated = refresh(application, first["refresh_token"])
    assert rotated.status_code == 200, rotated.content
    rotated = rotated.json()
    assert TokenClient(rotated["access_token"]).get("/api/public/me").status_code == 200

    # At once, as an attacker holding a stolen copy of the old token would.
    replay = refresh(application, first["refresh_token"])
    assert (replay.status_code, replay.json()) == (400, {"error": "invalid_grant"})
    # Whoever rotated first may be the attacker: the pair it got is dead too.
    denied = TokenClient(rotated["access_token"]).get("/api/public/me")
    assert (denied.status_code, denied.json()["error"]) == (401, "invalid_token")
    again = refresh(application, rotated["refresh_token"])
    assert (again.status_code, again.json()) == (400, {"error": "invalid_grant"})
    assert not AccessToken.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_refresh_that_loses_a_race_with_another_is_reuse(application, member, monkeypatch):
    """Two refreshes of one token both pass validation; the second to save is reuse too."""
    first = exchange_code(application, consent(browser(member), application)["code"]).json()
    validate = TicketingOAuth2Validator.validate_refresh_token
    raced, winner = [], []

    def validate_then_lose_the_race(self, *args, **kwargs):
        valid = validate(self, *args, **kwargs)
        if not raced:  # the other request rotates the token between validation and saving
            raced.append(True)
            winner.append(refresh(application, first["refresh_token"]))
        return valid

    monkeypatch.setattr(
        TicketingOAuth2Validator, "validate_refresh_token", validate_then_lose_the_race
    )
    loser = refresh(application, first["refresh_token"])
    assert winner[0].status_code == 200
    assert (loser.status_code, loser["Content-Type"], loser["Cache-Control"]) == (
        400,
        "application/json",
        "no-store",
    )
    assert loser.json() == {"error": "invalid_grant"}
    assert TokenClient(winner[0].json()["access_token"]).get("/api/public/me").status_code == 401
    assert not AccessToken.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()

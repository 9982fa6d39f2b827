"""What an attacker tried against the OAuth server (issue 12), each refused."""

import base64
import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, OperationalError, connections, transaction
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from oauth_setup.models import Application
from oauth_setup.services import application_create
from tests.factories import ApplicationFactory
from tests.oauth.flow import (
    REDIRECT_URI,
    authorize_url,
    browser,
    consent,
    csrf_token,
    exchange_code,
    hidden_fields,
    pkce_pair,
    query_of,
    refresh,
)
from tests.support import TokenClient, mint_token
from ticketing.api.exceptions import InvalidParameters

pytestmark = pytest.mark.django_db


def _basic(application, secret="s3cret") -> str:
    return "Basic " + base64.b64encode(f"{application.client_id}:{secret}".encode()).decode()


def _introspect(caller, token):
    return Client().post("/oauth/introspect", {"token": token}, HTTP_AUTHORIZATION=_basic(caller))


# --- Introspection (RFC 7662 §4) --------------------------------------------------------------


def test_introspection_of_another_applications_token_is_inactive(
    application, other_application, member
):
    token = mint_token(application=application, user=member, scope="public organizer")
    response = _introspect(other_application, token)
    assert response.status_code == 200
    assert response.json() == {"active": False}  # not even that the token exists


def test_introspection_by_the_tokens_own_and_a_platform_application(
    application, platform_application, member
):
    token = mint_token(application=application, user=member, scope="public organizer")
    for caller in (application, platform_application):
        body = _introspect(caller, token).json()
        assert body["active"] is True
        assert (body["scope"], body["client_id"], body["username"]) == (
            "public organizer",
            application.client_id,
            "staff",
        )


def test_introspection_with_another_clients_id_in_the_basic_header_is_its_own(
    application, other_application, member
):
    """Only the client that authenticated counts, not an id named beside it."""
    token = mint_token(application=application, user=member)
    response = Client().post(
        "/oauth/introspect",
        {
            "token": token,
            "client_id": other_application.client_id,
            "client_secret": "s3cret",
        },
        HTTP_AUTHORIZATION=_basic(application, secret="wrong"),
    )
    assert response.json() == {"active": False}


# --- Redirect URIs and consent (CONTRACT §4, RFC 9700 §4.1) ------------------------------------


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://127.0.0.1:8766/callback",
        "http://127.0.0.1:31337/callback",
        "http://127.0.0.1/callback",
        "http://127.0.0.1:8765/callback/",
    ],
)
def test_redirect_uri_must_equal_a_registered_one_exactly(application, member, redirect_uri):
    page = browser(member).get(authorize_url(application, redirect_uri=redirect_uri))
    assert page.status_code == 400
    assert "Mismatching redirect URI" in page.content.decode()
    assert not Grant.objects.exists()


def test_public_client_with_approval_prompt_auto_still_asks(public_application, member):
    mint_token(application=public_application, user=member)  # an earlier consent
    _verifier, challenge = pkce_pair()
    page = browser(member).get(
        authorize_url(
            public_application,
            approval_prompt="auto",
            code_challenge=challenge,
            code_challenge_method="S256",
        )
    )
    assert page.status_code == 200
    assert 'Allow <span class="app">Mobile app</span>' in page.content.decode()
    assert not Grant.objects.exists()


def test_confidential_client_with_approval_prompt_auto_skips_a_granted_consent(application, member):
    mint_token(application=application, user=member)
    answer = browser(member).get(authorize_url(application, approval_prompt="auto"))
    assert answer.status_code == 302
    assert query_of(answer["Location"])["code"]


def test_public_client_cannot_skip_consent(organizer):
    with pytest.raises(InvalidParameters, match="A public client cannot skip the consent page"):
        application_create(
            name="App",
            organizer=organizer,
            grant_type="authorization-code",
            redirect_uris=[REDIRECT_URI],
            public=True,
            skip_authorization=True,
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        ApplicationFactory(
            organizer=organizer,
            client_type=Application.CLIENT_PUBLIC,
            client_secret="",
            skip_authorization=True,
        )


# --- PKCE and the code exchange ----------------------------------------------------------------


def test_code_without_challenge_redeemed_with_a_verifier_is_invalid_grant(application, member):
    code = consent(browser(member), application)["code"]
    verifier, _ = pkce_pair()
    response = exchange_code(application, code, code_verifier=verifier)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_grant",
        "error_description": "This code was issued without a code_challenge.",
    }
    assert not AccessToken.objects.exists()


def test_redirect_uri_named_at_authorize_is_required_at_the_exchange(application, member):
    code = consent(browser(member), application)["code"]
    response = exchange_code(application, code, redirect_uri=None)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "Send the redirect_uri of the authorization request.",
    }
    assert not AccessToken.objects.exists()
    assert exchange_code(application, code).status_code == 200


def _consent_without_redirect_uri(client, application) -> dict[str, str]:
    url = f"/oauth/authorize?client_id={application.client_id}&response_type=code&state=n"
    html = client.get(url).content.decode()
    data = {**hidden_fields(html), "csrfmiddlewaretoken": csrf_token(html), "allow": "on"}
    data.pop("next")
    answer = client.post(url, data)
    assert answer.status_code == 302
    assert answer["Location"].startswith(REDIRECT_URI + "?")
    return query_of(answer["Location"])


def test_redirect_uri_not_named_at_authorize_is_optional_at_the_exchange(application, member):
    code = _consent_without_redirect_uri(browser(member), application)["code"]
    assert exchange_code(application, code, redirect_uri=None).status_code == 200

    code = _consent_without_redirect_uri(browser(member), application)["code"]
    assert exchange_code(application, code).status_code == 200  # the one it went to

    code = _consent_without_redirect_uri(browser(member), application)["code"]
    other = exchange_code(application, code, redirect_uri="http://127.0.0.1:8765/other")
    assert other.status_code == 400


# --- Refresh grace period (opt-in: REFRESH_TOKEN_GRACE_SECONDS) -------------------------------


def _user_tokens(application, member):
    return exchange_code(application, consent(browser(member), application)["code"]).json()


def _works(access_token) -> bool:
    return TokenClient(access_token).get("/api/public/me").status_code == 200


@pytest.fixture
def refresh_grace(settings):
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 30,
    }


def test_second_refresh_within_the_grace_period_gets_its_own_pair(
    application, member, refresh_grace
):
    first = _user_tokens(application, member)
    one = refresh(application, first["refresh_token"])
    two = refresh(application, first["refresh_token"])
    assert (one.status_code, two.status_code) == (200, 200)
    one, two = one.json(), two.json()
    assert set(two) == {
        "access_token",
        "token_type",
        "expires_in",
        "scope",
        "refresh_token",
        "created_at",
    }
    assert two["access_token"] and two["access_token"] != one["access_token"]
    assert two["refresh_token"] and two["refresh_token"] != one["refresh_token"]
    assert two["scope"] == "public"
    assert _works(one["access_token"]) and _works(two["access_token"])
    # Both go on refreshing.
    assert refresh(application, one["refresh_token"]).status_code == 200
    assert refresh(application, two["refresh_token"]).status_code == 200


def test_reuse_after_the_grace_period_revokes_the_family(application, member, refresh_grace):
    first = _user_tokens(application, member)
    one = refresh(application, first["refresh_token"]).json()
    two = refresh(application, first["refresh_token"]).json()
    RefreshToken.objects.filter(revoked__isnull=False).update(
        revoked=timezone.now() - timedelta(seconds=31)
    )
    replay = refresh(application, first["refresh_token"])
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    assert not _works(one["access_token"]) and not _works(two["access_token"])
    assert not AccessToken.objects.exists()


def test_revoked_refresh_token_is_refused_within_the_grace_period(
    application, member, refresh_grace
):
    tokens = _user_tokens(application, member)
    revoked = Client().post(
        "/oauth/revoke_token",
        {
            "token": tokens["refresh_token"],
            "token_type_hint": "refresh_token",
            "client_id": application.client_id,
            "client_secret": "s3cret",
        },
    )
    assert revoked.status_code == 200
    assert refresh(application, tokens["refresh_token"]).json()["error"] == "invalid_grant"


def _refresh_in_parallel(application, refresh_token, count=4) -> list:
    start = threading.Barrier(count, timeout=10)
    answers = []

    def refresh_now():
        try:
            start.wait()
            answers.append(refresh(application, refresh_token))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=refresh_now) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return answers


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_refreshes_of_one_token_are_reuse_and_revoke_the_family(application, member):
    """Requests that all pass validation before one rotates: each loser is caught at the lock."""
    first = _user_tokens(application, member)
    answers = _refresh_in_parallel(application, first["refresh_token"])
    assert sorted(answer.status_code for answer in answers) == [200, 400, 400, 400], [
        answer.content for answer in answers
    ]
    (winner,) = [answer.json() for answer in answers if answer.status_code == 200]
    assert all(
        answer.json() == {"error": "invalid_grant"}
        for answer in answers
        if answer.status_code == 400
    )
    assert not _works(winner["access_token"])
    assert refresh(application, winner["refresh_token"]).json() == {"error": "invalid_grant"}
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_refreshes_within_the_grace_period_all_succeed(application, member, refresh_grace):
    first = _user_tokens(application, member)
    answers = _refresh_in_parallel(application, first["refresh_token"])
    assert [answer.status_code for answer in answers] == [200] * 4, [
        answer.content for answer in answers
    ]
    pairs = [answer.json() for answer in answers]
    assert len({pair["access_token"] for pair in pairs}) == 4
    assert all(_works(pair["access_token"]) for pair in pairs)
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 4


# --- Metadata (RFC 8414) -----------------------------------------------------------------------


def test_authorization_server_metadata(db, settings):
    settings.ALLOWED_HOSTS = ["tickets.example.com"]
    response = Client().get(
        "/.well-known/oauth-authorization-server", HTTP_HOST="tickets.example.com"
    )
    assert response.status_code == 200
    base = "http://tickets.example.com"
    assert response.json() == {
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "revocation_endpoint": f"{base}/oauth/revoke_token",
        "introspection_endpoint": f"{base}/oauth/introspect",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": ["organizer", "public"],
        "token_endpoint_auth_methods_supported": [
            "client_secret_basic",
            "client_secret_post",
            "none",
        ],
        "revocation_endpoint_auth_methods_supported": [
            "client_secret_basic",
            "client_secret_post",
            "none",
        ],
        "introspection_endpoint_auth_methods_supported": [
            "client_secret_basic",
            "client_secret_post",
        ],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": False,
    }


def test_iss_of_authorization_responses_is_the_metadata_issuer(application, member):
    issuer = Client().get("/.well-known/oauth-authorization-server").json()["issuer"]
    assert consent(browser(member), application)["iss"] == issuer
    assert consent(browser(member), application, allow=False)["iss"] == issuer


# --- Database outage ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke_token", "/oauth/introspect"])
def test_database_outage_is_an_oauth_error_503(application, monkeypatch, path):
    def fail(*args, **kwargs):
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr("oauth2_provider.oauth2_validators.OAuth2Validator._load_application", fail)
    response = Client().post(
        path,
        {"grant_type": "client_credentials", "token": "t"},
        HTTP_AUTHORIZATION=_basic(application),
    )
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "temporarily_unavailable",
        "error_description": "The service is briefly unavailable; try again shortly.",
    }
    assert response["Retry-After"] == "5"
    assert response["Cache-Control"] == "no-store"

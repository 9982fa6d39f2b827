"""The authorization-code grant with Django's test client: login, consent, exchange, refresh."""

import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

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
    stored_token,
)
from tests.support import TokenClient

pytestmark = pytest.mark.django_db


def test_authorize_without_session_sends_to_login_and_back(application, member):
    client = browser()
    url = authorize_url(application, scope="public organizer")
    first = client.get(url)
    assert first.status_code == 302
    assert first["Location"].startswith("/oauth/login")
    assert query_of(first["Location"])["next"] == url

    login_page = client.get(first["Location"])
    html = login_page.content.decode()
    assert login_page.status_code == 200
    assert 'name="viewport"' in html
    assert "Gate app" in html and "Bangkok Live" in html  # who is asking
    signed_in = client.post(
        "/oauth/login/",
        {
            "username": "staff",
            "password": "password",
            "next": url,
            "csrfmiddlewaretoken": csrf_token(html),
        },
    )
    assert signed_in.status_code == 302
    assert signed_in["Location"] == url
    assert client.get(url).status_code == 200


def test_login_rejects_wrong_password_and_missing_csrf(application, member):
    client = browser()
    html = client.get("/oauth/login/").content.decode()
    wrong = client.post(
        "/oauth/login/",
        {"username": "staff", "password": "nope", "csrfmiddlewaretoken": csrf_token(html)},
    )
    assert wrong.status_code == 200
    assert "Please enter a correct username and password" in wrong.content.decode()
    assert "_auth_user_id" not in client.session

    no_csrf = browser().post("/oauth/login/", {"username": "staff", "password": "password"})
    assert no_csrf.status_code == 403


def test_consent_page_names_application_organizer_and_scopes(application, member):
    page = browser(member).get(authorize_url(application, scope="public organizer"))
    html = page.content.decode()
    assert page.status_code == 200
    assert 'Allow <span class="app">Gate app</span>' in html
    assert "This application belongs to <strong>Bangkok Live</strong>" in html
    assert "your own tickets and orders" in html  # public, in words
    assert "check tickets in and create tickets" in html  # organizer, in words
    assert "scope “public”" in html and "scope “organizer”" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert "Signed in as staff" in html
    assert "no-store" in page["Cache-Control"]
    assert page["X-Frame-Options"] == "DENY"  # no clickjacking of the Allow button


def test_consent_page_of_platform_application_says_so(platform_application, member):
    html = browser(member).get(authorize_url(platform_application)).content.decode()
    assert "run by the ticketing platform itself" in html
    assert "scope “organizer”" not in html  # scope defaults to what was asked: public


def test_consent_post_without_csrf_is_refused(application, member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    answer = client.post(
        "/oauth/authorize",
        {
            "client_id": application.client_id,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "scope": "public",
            "allow": "on",
        },
    )
    assert answer.status_code == 403
    assert Grant.objects.count() == 0


def test_confidential_flow_without_pkce_issues_spec_token_response(application, member):
    redirect = consent(browser(member), application, scope="public organizer", state="s-1")
    assert redirect["state"] == "s-1"
    assert redirect["iss"] == "http://testserver"  # RFC 9207: which server answered
    before = int(time.time())

    response = exchange_code(application, redirect["code"])

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {
        "access_token",
        "token_type",
        "expires_in",
        "scope",
        "refresh_token",
        "created_at",
    }
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 7200
    assert body["scope"] == "public organizer"
    assert isinstance(body["created_at"], int)
    assert before <= body["created_at"] <= int(time.time())
    token = stored_token(body["access_token"])
    assert token.user == member and token.application == application
    assert token.token == ""  # only the hash is stored
    assert RefreshToken.objects.get(access_token=token).token == ""

    me = TokenClient(body["access_token"]).get("/api/public/me")
    assert me.status_code == 200
    assert me.json()["id"] == member.id


def test_scope_defaults_to_public(application, member):
    client = browser(member)
    page = client.get(
        "/oauth/authorize?"
        f"client_id={application.client_id}&redirect_uri={REDIRECT_URI}&response_type=code"
    )
    assert page.status_code == 200
    assert "scope “public”" in page.content.decode()
    assert "scope “organizer”" not in page.content.decode()


def test_paths_without_and_with_trailing_slash(application, member):
    client = browser(member)
    assert client.get(authorize_url(application)).status_code == 200
    with_slash = authorize_url(application).replace("authorize?", "authorize/?")
    assert client.get(with_slash).status_code == 200
    code = consent(client, application)["code"]
    slash = Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": application.client_id,
            "client_secret": "s3cret",
        },
    )
    assert slash.status_code == 200


def test_deny_redirects_with_access_denied_and_the_issuer(application, member):
    redirect = consent(browser(member), application, allow=False, state="st")
    # RFC 9207: errors name the server too, or strict clients report "iss missing".
    assert redirect == {"error": "access_denied", "state": "st", "iss": "http://testserver"}
    assert Grant.objects.count() == 0


def test_code_is_single_use_and_reuse_revokes_its_tokens(application, member):
    code = consent(browser(member), application)["code"]
    first = exchange_code(application, code)
    assert first.status_code == 200
    tokens = first.json()
    second = exchange_code(application, code)
    assert second.status_code == 400
    assert second.json()["error"] == "invalid_grant"
    # RFC 6749 §4.1.2: whoever redeemed it first may not be the client; its tokens die.
    assert TokenClient(tokens["access_token"]).get("/api/public/me").status_code == 401
    assert refresh(application, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    assert not AccessToken.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    assert not Grant.objects.exists()


def test_reused_code_revokes_the_tokens_rotated_from_it(application, member):
    code = consent(browser(member), application)["code"]
    first = exchange_code(application, code).json()
    rotated = refresh(application, first["refresh_token"]).json()
    assert TokenClient(rotated["access_token"]).get("/api/public/me").status_code == 200
    assert exchange_code(application, code).json()["error"] == "invalid_grant"
    assert TokenClient(rotated["access_token"]).get("/api/public/me").status_code == 401


def test_unknown_code_revokes_nothing(application, member):
    code = consent(browser(member), application)["code"]
    tokens = exchange_code(application, code).json()
    assert exchange_code(application, "not-a-code").json()["error"] == "invalid_grant"
    assert TokenClient(tokens["access_token"]).get("/api/public/me").status_code == 200


def test_code_expires_after_sixty_seconds(application, member):
    code = consent(browser(member), application)["code"]
    grant = Grant.objects.get(code=code)
    grant.expires = grant.expires.replace(year=2000)
    grant.save()
    response = exchange_code(application, code)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_code_lives_sixty_seconds(application, member):
    code = consent(browser(member), application)["code"]
    grant = Grant.objects.get(code=code)
    lifetime = (grant.expires - grant.created).total_seconds()
    assert 59 <= lifetime <= 61


def test_exchange_with_another_redirect_uri_is_invalid_grant(application, member):
    code = consent(browser(member), application)["code"]
    response = exchange_code(application, code, redirect_uri="http://127.0.0.1:8765/other")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert not AccessToken.objects.exists()


def test_authorize_with_unregistered_redirect_uri_never_redirects(application, member):
    page = browser(member).get(
        authorize_url(application, redirect_uri="https://evil.example.com/callback")
    )
    assert page.status_code == 400
    html = page.content.decode()
    assert "cannot be completed" in html
    assert "Mismatching redirect URI" in html


def test_authorize_with_unknown_client_is_an_error_page(member, db):
    page = browser(member).get(
        "/oauth/authorize?client_id=nope&response_type=code&redirect_uri=" + REDIRECT_URI
    )
    assert page.status_code == 400
    assert "invalid_client_id" in page.content.decode() or "Invalid client_id" in (
        page.content.decode()
    )


def test_authorize_with_unknown_scope_redirects_invalid_scope(application, member):
    answer = browser(member).get(authorize_url(application, scope="public admin"))
    assert answer.status_code == 302
    assert query_of(answer["Location"]) == {
        "error": "invalid_scope",
        "state": "xyz",
        "iss": "http://testserver",
    }


@pytest.mark.parametrize(
    "secret, client_id",
    [("wrong", None), (None, None), ("s3cret", "unknown-client")],
    ids=["wrong-secret", "no-secret", "unknown-client"],
)
def test_token_with_bad_client_credentials_is_invalid_client(
    application, member, secret, client_id
):
    code = consent(browser(member), application)["code"]
    extra = {"client_id": client_id} if client_id else {}
    response = exchange_code(application, code, secret=secret, **extra)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert not AccessToken.objects.exists()


def test_client_secret_is_stored_hashed(application):
    application.refresh_from_db()
    assert application.client_secret != "s3cret"
    # Salted and hashed fast, as a random secret may be (oauth_setup.hashers); live too.
    assert application.client_secret.startswith("client_secret_pbkdf2_sha256$1$")


def test_public_client_requires_pkce(public_application, member):
    client = browser(member)
    without = client.get(authorize_url(public_application))
    assert without.status_code == 302
    assert query_of(without["Location"])["error"] == "invalid_request"
    assert query_of(without["Location"])["error_description"] == "Code challenge required."

    verifier, challenge = pkce_pair()
    code = consent(
        client, public_application, code_challenge=challenge, code_challenge_method="S256"
    )["code"]
    wrong = exchange_code(public_application, code, secret=None, code_verifier="x" * 50)
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_grant"

    code = consent(
        client, public_application, code_challenge=challenge, code_challenge_method="S256"
    )["code"]
    missing = exchange_code(public_application, code, secret=None)
    assert missing.status_code == 400
    assert missing.json()["error"] == "invalid_request"

    code = consent(
        client, public_application, code_challenge=challenge, code_challenge_method="S256"
    )["code"]
    ok = exchange_code(public_application, code, secret=None, code_verifier=verifier)
    assert ok.status_code == 200, ok.content
    assert ok.json()["token_type"] == "Bearer"


def test_confidential_client_may_still_use_pkce(application, member):
    verifier, challenge = pkce_pair()
    code = consent(
        browser(member), application, code_challenge=challenge, code_challenge_method="S256"
    )["code"]
    assert exchange_code(application, code, code_verifier="y" * 50).status_code == 400
    code = consent(
        browser(member), application, code_challenge=challenge, code_challenge_method="S256"
    )["code"]
    assert exchange_code(application, code, code_verifier=verifier).status_code == 200


def test_refresh_rotates_and_reuse_revokes_the_family(application, member):
    code = consent(browser(member), application, scope="public organizer")["code"]
    first = exchange_code(application, code).json()

    second = refresh(application, first["refresh_token"])
    assert second.status_code == 200, second.content
    rotated = second.json()
    assert set(rotated) == set(first)
    assert rotated["refresh_token"] != first["refresh_token"]
    assert rotated["access_token"] != first["access_token"]
    assert rotated["scope"] == "public organizer"
    assert rotated["expires_in"] == 7200
    assert isinstance(rotated["created_at"], int)
    # The old access token went with its refresh token.
    assert TokenClient(first["access_token"]).get("/api/public/me").status_code == 401
    assert TokenClient(rotated["access_token"]).get("/api/public/me").status_code == 200

    # Replaying the used refresh token after the grace period: refused, and the whole family
    # dies with it.
    RefreshToken.objects.filter(revoked__isnull=False).update(
        revoked=timezone.now() - timedelta(seconds=31)
    )
    replay = refresh(application, first["refresh_token"])
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert TokenClient(rotated["access_token"]).get("/api/public/me").status_code == 401
    latest = refresh(application, rotated["refresh_token"])
    assert latest.status_code == 400
    assert latest.json()["error"] == "invalid_grant"
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    assert not AccessToken.objects.exists()


def test_refresh_of_another_client_is_refused(application, other_application, member):
    code = consent(browser(member), application)["code"]
    tokens = exchange_code(application, code).json()
    response = Client().post(
        "/oauth/token",
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": other_application.client_id,
            "client_secret": "s3cret",
        },
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_refresh_of_deactivated_user_is_refused(application, member):
    code = consent(browser(member), application)["code"]
    tokens = exchange_code(application, code).json()
    member.is_active = False
    member.save()
    assert TokenClient(tokens["access_token"]).get("/api/public/me").status_code == 401
    assert refresh(application, tokens["refresh_token"]).json()["error"] == "invalid_grant"


def _consent_form(client, application) -> dict[str, str]:
    html = client.get(authorize_url(application)).content.decode()
    data = {**hidden_fields(html), "csrfmiddlewaretoken": csrf_token(html), "allow": "on"}
    data.pop("next")
    return data


def test_altered_consent_form_grants_nothing(application, member):
    client = browser(member)
    data = _consent_form(client, application)
    del data["client_id"]
    answer = client.post("/oauth/authorize", data)
    assert answer.status_code == 400
    assert "This authorization request is incomplete" in answer.content.decode()
    assert not Grant.objects.exists()


def test_consent_form_with_swapped_redirect_uri_never_redirects(application, member):
    client = browser(member)
    data = {**_consent_form(client, application), "redirect_uri": "https://evil.example.com/cb"}
    answer = client.post("/oauth/authorize", data)
    assert answer.status_code == 400
    assert "Mismatching redirect URI" in answer.content.decode()
    assert not Grant.objects.exists()


def test_consent_form_with_added_scope_is_invalid_scope(application, member):
    client = browser(member)
    data = {**_consent_form(client, application), "scope": "public organizer admin"}
    answer = client.post("/oauth/authorize", data)
    assert answer.status_code == 302
    assert query_of(answer["Location"]) == {
        "error": "invalid_scope",
        "state": "xyz",
        "iss": "http://testserver",
    }
    assert not Grant.objects.exists()


def test_pkce_plain_method_is_refused(public_application, member):
    # DOT refuses it when the grant would be created, i.e. on Allow (RFC 9700 §2.1.1).
    redirect = consent(
        browser(member), public_application, code_challenge="x" * 43, code_challenge_method="plain"
    )
    assert redirect["error"] == "invalid_request"
    assert redirect["error_description"] == 'Unsupported "plain" code_challenge_method; use "S256".'
    assert not Grant.objects.exists()

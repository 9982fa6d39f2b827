"""How tokens are saved through DOT's public hooks (issue 27): families, races, resources."""

import base64
import json
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from oauth_setup.validators import TicketingOAuth2Validator, code_token_family
from tests.oauth.flow import (
    REDIRECT_URI,
    authorize_url,
    browser,
    consent,
    csrf_token,
    exchange_code,
    hidden_fields,
    refresh,
    stored_token,
)
from tests.support import TokenClient, mint_token

pytestmark = pytest.mark.django_db

API = "http://testserver/api/"


@pytest.fixture
def refresh_grace(settings):
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 30,
    }


def _works(access_token) -> bool:
    return TokenClient(access_token).get("/api/public/me").status_code == 200


def _revoke(application, refresh_token):
    return Client().post(
        "/oauth/revoke_token",
        {
            "token": refresh_token,
            "token_type_hint": "refresh_token",
            "client_id": application.client_id,
            "client_secret": "s3cret",
        },
    )


def test_tokens_of_a_code_are_in_the_codes_family(application, member):
    code = consent(browser(member), application)["code"]
    tokens = exchange_code(application, code).json()
    (live,) = RefreshToken.objects.filter(revoked__isnull=True)
    assert live.token_family == code_token_family(code)
    assert live.access_token == stored_token(tokens["access_token"])
    rotated = refresh(application, tokens["refresh_token"]).json()
    (live,) = RefreshToken.objects.filter(revoked__isnull=True)
    assert live.token_family == code_token_family(code)
    assert live.access_token == stored_token(rotated["access_token"])


@pytest.mark.parametrize("grace", [False, True])
def test_refresh_that_races_a_revocation_gets_nothing(
    application, member, monkeypatch, settings, grace
):
    """Revoked between the refresh's validation and its saving: refused, no pair issued."""
    if grace:
        settings.OAUTH2_PROVIDER = {
            **settings.OAUTH2_PROVIDER,
            "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 30,
        }
    first = exchange_code(application, consent(browser(member), application)["code"]).json()
    validate = TicketingOAuth2Validator.validate_refresh_token
    revoked = []

    def validate_then_revoked(self, *args, **kwargs):
        valid = validate(self, *args, **kwargs)
        revoked.append(_revoke(application, first["refresh_token"]).status_code)
        return valid

    monkeypatch.setattr(TicketingOAuth2Validator, "validate_refresh_token", validate_then_revoked)
    answer = refresh(application, first["refresh_token"])
    assert revoked == [200]
    assert (answer.status_code, answer.json()) == (400, {"error": "invalid_grant"})
    assert (answer["Content-Type"], answer["Cache-Control"]) == ("application/json", "no-store")
    assert not AccessToken.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_grace_pair_is_in_the_family_with_the_resources_of_the_token_it_replaces(
    application, member, refresh_grace
):
    code = consent(browser(member), application, resource=API)["code"]
    first = exchange_code(application, code).json()
    assert stored_token(first["access_token"]).resource == [API]
    one = refresh(application, first["refresh_token"]).json()
    two = refresh(application, first["refresh_token"])
    assert two.status_code == 200, two.content
    two = two.json()
    assert stored_token(two["access_token"]).resource == [API]
    assert _works(one["access_token"]) and _works(two["access_token"])
    live = RefreshToken.objects.filter(revoked__isnull=True)
    assert sorted(token.resource for token in live) == [[API], [API]]
    assert {token.token_family for token in live} == {code_token_family(code)}
    # Naming the same resource again is allowed: it narrows nothing.
    three = Client().post(
        "/oauth/token",
        {
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": application.client_id,
            "client_secret": "s3cret",
            "resource": API,
        },
    )
    assert three.status_code == 200, three.content
    assert stored_token(three.json()["access_token"]).resource == [API]


def test_grace_pair_for_a_resource_beyond_the_tokens_is_refused(application, member, refresh_grace):
    first = exchange_code(
        application, consent(browser(member), application, resource=API)["code"]
    ).json()
    assert refresh(application, first["refresh_token"]).status_code == 200
    tokens_before = set(AccessToken.objects.values_list("pk", flat=True))
    answer = Client().post(
        "/oauth/token",
        {
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": application.client_id,
            "client_secret": "s3cret",
            "resource": "https://other.example.com/",
        },
    )
    # As DOT answers its own invalid_target at the token endpoint: the error's JSON body,
    # without a JSON Content-Type (oauthlib gives one only to its validation's errors).
    assert answer.status_code == 400
    assert json.loads(answer.content)["error"] == "invalid_target"
    assert set(AccessToken.objects.values_list("pk", flat=True)) == tokens_before
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1


def test_iss_is_in_the_authorization_response_once(application, member):
    issuer = Client().get("/.well-known/oauth-authorization-server").json()["issuer"]
    for allow in (True, False):
        # DOT adds it to the code; ConsentView to access_denied, which DOT answers itself.
        location = _consent_location(browser(member), application, allow=allow)
        query = parse_qs(urlparse(location).query)
        assert location.startswith(REDIRECT_URI + "?")
        assert (query["iss"], query["state"]) == ([issuer], ["xyz"])


def _consent_location(client, application, *, allow) -> str:
    html = client.get(authorize_url(application)).content.decode()
    data = {**hidden_fields(html), "csrfmiddlewaretoken": csrf_token(html)}
    data.pop("next", None)
    data["allow" if allow else "deny"] = "on"
    return client.post("/oauth/authorize", data)["Location"]


def test_introspection_caller_is_found_whatever_the_query_string(application, member):
    """oauthlib refuses a query with characters a form-encoded one cannot hold."""
    token = mint_token(application=application, user=member)
    basic = base64.b64encode(f"{application.client_id}:s3cret".encode()).decode()
    answer = Client().post(
        '/oauth/introspect?note=[a|b]"',
        {"token": token},
        HTTP_AUTHORIZATION=f"Basic {basic}",
    )
    assert answer.status_code == 200
    assert (answer.json()["active"], answer.json()["client_id"]) == (True, application.client_id)

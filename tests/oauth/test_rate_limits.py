"""Every endpoint that checks a credential stops a guesser at its address (a stranger's failures
refusing no one elsewhere: test_no_lockout)."""

import base64

import pytest
from django.test import Client, override_settings

from tests.oauth.support import wait_for_fresh_window
from tests.support import mint_token

pytestmark = pytest.mark.django_db

LIMIT = "3/m"


def _basic(application, secret) -> str:
    return "Basic " + base64.b64encode(f"{application.client_id}:{secret}".encode()).decode()


def _revoke(application, secret, address="127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(
        "/oauth/revoke_token",
        {"token": "t", "client_id": application.client_id, "client_secret": secret},
    )


def _introspect(application, secret, token="t", address="127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(
        "/oauth/introspect", {"token": token}, HTTP_AUTHORIZATION=_basic(application, secret)
    )


def _token(application, secret, address="127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(
        "/oauth/token",
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=_basic(application, secret),
    )


def _assert_oauth_429(response):
    assert response.status_code == 429
    retry_after = response["Retry-After"]
    assert 1 <= int(retry_after) <= 60
    assert response.json() == {
        "error": "rate_limited",
        "error_description": (
            f"Too many failed client authentications; try again in {retry_after} seconds."
        ),
    }
    assert response["Cache-Control"] == "no-store"


@override_settings(CREDENTIAL_FAILURE_RATE_LIMIT=LIMIT)
@pytest.mark.parametrize(
    ("call", "failed"),
    [(_revoke, 401), (_introspect, 403), (_token, 401)],
    ids=["revoke", "introspect", "token"],
)
def test_wrong_client_secrets_from_one_address_are_limited(
    application, other_application, call, failed
):
    wait_for_fresh_window("127.0.0.1")
    assert [call(application, "guess").status_code for _ in range(3)] == [failed] * 3
    _assert_oauth_429(call(other_application, "s3cret"))  # even a right secret
    # Elsewhere, another client is not this guesser.
    assert call(other_application, "s3cret", address="10.0.0.9").status_code == 200


@override_settings(CREDENTIAL_FAILURE_RATE_LIMIT=LIMIT)
def test_one_guess_counts_on_every_oauth_endpoint(application):
    wait_for_fresh_window("127.0.0.1")
    assert _revoke(application, "guess").status_code == 401
    assert _introspect(application, "guess").status_code == 403
    assert _token(application, "guess").status_code == 401
    _assert_oauth_429(_revoke(application, "s3cret"))


@override_settings(CREDENTIAL_FAILURE_RATE_LIMIT=LIMIT)
def test_successful_introspections_are_never_limited(application):
    token = mint_token(application=application)
    for _ in range(10):
        response = _introspect(application, "s3cret", token=token)
        assert response.status_code == 200
        assert response.json()["active"] is True


def _sign_in(path, username, password, address="127.0.0.1"):
    client = Client(REMOTE_ADDR=address)
    return client, client.post(path, {"username": username, "password": password})


@override_settings(SIGN_IN_ADDRESS_FAILURE_RATE_LIMIT=LIMIT)
@pytest.mark.parametrize("path", ["/oauth/login/", "/admin/login/"])
def test_wrong_passwords_from_one_address_are_limited_for_every_account(member, buyer, path):
    member.is_staff = True
    member.save()
    wait_for_fresh_window("127.0.0.1")
    for n in range(3):
        assert _sign_in(path, f"user{n}", "guess")[1].status_code == 200
    assert _sign_in(path, "staff", "password")[1].status_code == 429
    # From another address the account is fine.
    client, signed_in = _sign_in(path, "staff", "password", address="10.0.0.8")
    assert signed_in.status_code == 302
    assert client.session["_auth_user_id"] == str(member.pk)

"""A stranger's failures never refuse the right credential from elsewhere (CONTRACT §9).

Client secrets are generated and high-entropy, so guessing one is hopeless and only the
guesser's address is limited; a person's password is counted per username and address, with
a short backoff per username when many addresses fail at once, never a lockout.
"""

import base64
import re

import pytest
from django.contrib.auth.hashers import check_password, get_hasher, identify_hasher, make_password
from django.test import Client, override_settings

from oauth_setup.hashers import ClientSecretHasher
from tests.factories import ApplicationFactory
from tests.oauth.support import wait_for_fresh_window

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.7"
HONEST = "198.51.100.20"
FAILURES = 12  # past the default limit of 10


def _basic(application, secret) -> str:
    return "Basic " + base64.b64encode(f"{application.client_id}:{secret}".encode()).decode()


def _token(application, secret, address):
    return Client(REMOTE_ADDR=address).post(
        "/oauth/token",
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=_basic(application, secret),
    )


def _revoke(application, secret, address):
    return Client(REMOTE_ADDR=address).post(
        "/oauth/revoke_token",
        {"token": "t", "client_id": application.client_id, "client_secret": secret},
    )


def _introspect(application, secret, address):
    return Client(REMOTE_ADDR=address).post(
        "/oauth/introspect", {"token": "t"}, HTTP_AUTHORIZATION=_basic(application, secret)
    )


@pytest.mark.parametrize(
    ("call", "failed"),
    [(_token, 401), (_revoke, 401), (_introspect, 403)],
    ids=["token", "revoke", "introspect"],
)
def test_wrong_secrets_from_one_address_do_not_lock_the_client_out_elsewhere(
    application, call, failed
):
    wait_for_fresh_window(ATTACKER, period=15 * 60)
    statuses = [call(application, "guess", ATTACKER).status_code for _ in range(FAILURES)]
    assert statuses == [failed] * 10 + [429] * 2

    assert call(application, "s3cret", HONEST).status_code == 200
    # The guesser's own address stays refused, even with the right secret.
    refused = call(application, "s3cret", ATTACKER)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 15 * 60
    assert refused.json()["error"] == "rate_limited"


def _sign_in(path, username, password, address):
    client = Client(REMOTE_ADDR=address)
    return client, client.post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", ["/oauth/login/", "/admin/login/"])
def test_wrong_passwords_from_one_address_do_not_lock_the_user_out_elsewhere(member, path):
    member.is_staff = True
    member.save()
    wait_for_fresh_window(ATTACKER, period=15 * 60)
    statuses = [
        _sign_in(path, "staff", f"guess-{n}", ATTACKER)[1].status_code for n in range(FAILURES)
    ]
    assert statuses == [200] * 10 + [429] * 2

    client, signed_in = _sign_in(path, "staff", "password", HONEST)
    assert signed_in.status_code == 302
    assert client.session["_auth_user_id"] == str(member.pk)
    # The guesser's own address stays refused, even with the right password.
    client, refused = _sign_in(path, "staff", "password", ATTACKER)
    assert refused.status_code == 429
    assert "_auth_user_id" not in client.session
    retry_after = int(refused["Retry-After"])
    assert 1 <= retry_after <= 15 * 60
    html = refused.content.decode()
    assert "Too many sign-in attempts" in html
    assert f"Try again in {-(-retry_after // 60)} minute" in html


@override_settings(CREDENTIAL_FAILURE_RATE_LIMIT="3/m")
def test_one_address_may_still_fail_for_one_user_only_so_often(member):
    """Per username and address: another address's failures for the same user do not count."""
    wait_for_fresh_window(ATTACKER)
    wait_for_fresh_window(HONEST)
    assert _sign_in("/oauth/login/", "staff", "guess", HONEST)[1].status_code == 200
    for _ in range(3):
        assert _sign_in("/oauth/login/", "staff", "guess", ATTACKER)[1].status_code == 200
    assert _sign_in("/oauth/login/", "staff", "password", ATTACKER)[1].status_code == 429
    assert _sign_in("/oauth/login/", "staff", "password", HONEST)[1].status_code == 302


# One account, as the sign-in form reads it (NFKC, then case-folded by the count).
SPELLINGS_OF_STAFF = [
    "ｓｔａｆｆ", "𝐬taff", "s𝐭aff", "st𝐚ff", "sta𝐟f", "staf𝐟",
    "ＳＴＡＦＦ", "ſtaff", "𝒔𝒕𝒂𝒇𝒇", "Staff", "sｔaff", "stａff",
]  # fmt: skip


def test_unicode_spellings_of_a_username_count_as_that_username(member):
    wait_for_fresh_window(ATTACKER, period=15 * 60)
    client, signed_in = _sign_in("/oauth/login/", "ｓｔａｆｆ", "password", HONEST)
    assert signed_in.status_code == 302  # the form signs this spelling in as `staff`
    assert client.session["_auth_user_id"] == str(member.pk)

    statuses = [
        _sign_in("/oauth/login/", spelling, "guess", ATTACKER)[1].status_code
        for spelling in SPELLINGS_OF_STAFF
    ]
    assert statuses == [200] * 10 + [429] * 2
    assert _sign_in("/oauth/login/", "staff", "password", ATTACKER)[1].status_code == 429


@override_settings(USERNAME_FAILURE_RATE_LIMIT="3/m")
def test_failures_for_a_user_from_many_addresses_bring_only_a_short_backoff(member):
    wait_for_fresh_window("user:staff")
    for n in range(3):
        assert _sign_in("/oauth/login/", "staff", "guess", f"10.9.0.{n}")[1].status_code == 200

    client, paused = _sign_in("/oauth/login/", "staff", "password", HONEST)
    assert paused.status_code == 429
    assert 1 <= int(paused["Retry-After"]) <= 60
    assert "_auth_user_id" not in client.session
    # Another user is not paused.
    assert _sign_in("/oauth/login/", "buyer", "guess", HONEST)[1].status_code == 200


def test_the_backoff_per_user_lasts_seconds_not_minutes(member, settings):
    seconds = re.fullmatch(r"\d+/(\d*)s", settings.USERNAME_FAILURE_RATE_LIMIT).group(1)
    period = int(seconds or 1)
    assert period <= 10
    settings.USERNAME_FAILURE_RATE_LIMIT = f"3/{period}s"
    wait_for_fresh_window("user:staff", period=period, margin=period / 2)
    for n in range(3):
        assert _sign_in("/oauth/login/", "staff", "guess", f"10.8.0.{n}")[1].status_code == 200
    paused = _sign_in("/oauth/login/", "staff", "password", HONEST)[1]
    assert paused.status_code == 429
    assert 1 <= int(paused["Retry-After"]) <= period


# --- Client secrets are hashed for what they are: random and high-entropy --------------------


def test_new_client_secrets_are_stored_with_the_fast_hasher_and_passwords_are_not():
    application = ApplicationFactory(client_secret="s3cret")
    hasher = identify_hasher(application.client_secret)
    assert hasher.algorithm == ClientSecretHasher.algorithm
    assert check_password("s3cret", application.client_secret)
    assert not check_password("s3cre", application.client_secret)
    assert get_hasher("default").algorithm != ClientSecretHasher.algorithm


LEGACY_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "oauth_setup.hashers.ClientSecretHasher",
]


@override_settings(PASSWORD_HASHERS=LEGACY_HASHERS)
@pytest.mark.parametrize("call", [_token, _revoke], ids=["basic", "body"])
def test_a_slow_hashed_secret_still_works_and_is_rehashed_fast_on_use(organizer, call):
    application = ApplicationFactory(
        organizer=organizer, client_secret=make_password("s3cret", hasher="pbkdf2_sha256")
    )
    assert identify_hasher(application.client_secret).algorithm == "pbkdf2_sha256"

    assert call(application, "s3cret", HONEST).status_code == 200

    application.refresh_from_db()
    assert identify_hasher(application.client_secret).algorithm == ClientSecretHasher.algorithm
    assert check_password("s3cret", application.client_secret)
    assert call(application, "s3cret", HONEST).status_code == 200
    assert call(application, "wrong", HONEST).status_code == 401


@override_settings(PASSWORD_HASHERS=LEGACY_HASHERS)
def test_a_wrong_secret_leaves_a_slow_hash_as_it_was(organizer):
    legacy = make_password("s3cret", hasher="pbkdf2_sha256")
    application = ApplicationFactory(organizer=organizer, client_secret=legacy)

    assert _token(application, "wrong", HONEST).status_code == 401

    application.refresh_from_db()
    assert application.client_secret == legacy

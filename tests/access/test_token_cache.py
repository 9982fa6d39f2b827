"""Validated tokens served from the cache, and forgotten the moment the database disagrees."""

import urllib.parse
import urllib.request

import pytest
from django.contrib.auth.models import update_last_login
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from oauth2_provider.models import AccessToken
from rest_framework.test import APIClient

from oauth_setup import token_cache
from tests.factories import ApplicationFactory, UserFactory
from tests.oauth.support import (
    database_url,
    free_port,
    get,
    gunicorn_command,
    running,
    server_env,
)
from tests.support import TokenClient, mint_token

pytestmark = pytest.mark.django_db

EVENTS = "/api/public/organizers/{}/events"


def _token_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return sum("oauth2_provider_accesstoken" in q["sql"] for q in captured.captured_queries)


def _cached(raw: str):
    return cache.get(token_cache.KEY_PREFIX + token_cache.checksum_of(raw))


def test_second_call_does_not_read_the_token(application, organizer):
    client = TokenClient(mint_token(application=application))
    url = EVENTS.format(organizer.id)
    assert _token_queries(client, url) == 1
    assert _token_queries(client, url) == 0


def test_cached_copy_has_no_password_or_secret_hash(application, member):
    raw = mint_token(application=application, user=member, scope="public organizer")
    assert TokenClient(raw).get("/api/public/me").status_code == 200
    copy = _cached(raw)
    assert copy.user == member and copy.application == application
    assert "password" in copy.user.get_deferred_fields()
    assert "client_secret" in copy.application.get_deferred_fields()
    assert copy.scope == "public organizer"


def test_off_when_the_setting_is_zero(settings, application, organizer):
    settings.API_TOKEN_CACHE_SECONDS = 0
    client = TokenClient(mint_token(application=application))
    url = EVENTS.format(organizer.id)
    assert _token_queries(client, url) == 1
    assert _token_queries(client, url) == 1


def test_token_sent_in_the_query_string_is_not_cached(application, organizer):
    raw = mint_token(application=application)
    url = EVENTS.format(organizer.id) + f"?access_token={raw}"
    assert _token_queries(APIClient(), url) == 1
    assert _cached(raw) is None


@pytest.mark.parametrize(
    "end_access",
    [
        pytest.param(lambda token: token.revoke(), id="token revoked"),
        pytest.param(lambda token: token.user.delete(), id="user deleted"),
        pytest.param(lambda token: token.application.delete(), id="application deleted"),
    ],
)
def test_forgotten_when_the_token_goes(end_access, application, member):
    raw = mint_token(application=application, user=member)
    client = TokenClient(raw)
    assert client.get("/api/public/organizers").status_code == 200
    end_access(AccessToken.objects.get(token_checksum=token_cache.checksum_of(raw)))
    response = client.get("/api/public/organizers")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"


def test_deactivated_user_loses_access_at_once(application, member):
    client = TokenClient(mint_token(application=application, user=member))
    assert client.get("/api/public/organizers").status_code == 200
    member.is_active = False
    member.save()
    assert client.get("/api/public/organizers").status_code == 401


def test_renamed_user_is_seen_at_once(application, member):
    client = TokenClient(mint_token(application=application, user=member))
    assert client.get("/api/public/me").json()["full_name"] != "Renamed Person"
    member.full_name = "Renamed Person"
    member.save()
    assert client.get("/api/public/me").json()["full_name"] == "Renamed Person"


def test_application_moved_to_another_organizer_is_seen_at_once(
    application, organizer, other_organizer
):
    client = TokenClient(mint_token(application=application))
    url = EVENTS.format(organizer.id)
    assert client.get(url).status_code == 200
    application.organizer = other_organizer
    application.save()
    response = client.get(url)
    assert response.status_code == 403
    assert response.json()["error"] == "application_not_owned"


def test_token_given_a_narrower_scope_is_seen_at_once(application, organizer, member):
    raw = mint_token(application=application, user=member, scope="public organizer")
    client = TokenClient(raw)
    url = EVENTS.format(organizer.id)
    assert client.get(url).status_code == 200
    token = AccessToken.objects.get(token_checksum=token_cache.checksum_of(raw))
    token.scope = "public"
    token.save()
    response = client.get(url)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_logging_in_again_keeps_the_cached_token(application, member):
    client = TokenClient(mint_token(application=application, user=member))
    assert client.get("/api/public/organizers").status_code == 200
    update_last_login(None, member)
    assert _token_queries(client, "/api/public/organizers") == 0


class _UnreachableCache(LocMemCache):
    def set_many(self, *args, **kwargs):
        raise ConnectionError("cache unreachable")


@pytest.mark.django_db(transaction=True)  # the revocation's own transaction is the outermost
def test_revocation_the_cache_cannot_record_is_refused_and_undone(settings, application):
    raw = mint_token(application=application)
    client = TokenClient(raw)
    assert client.get("/api/public/organizers").status_code == 200
    settings.CACHES = {
        **settings.CACHES,
        "strict": {"BACKEND": f"{__name__}._UnreachableCache", "LOCATION": "unreachable"},
    }
    revoked = Client(raise_request_exception=False).post(
        "/oauth/revoke_token",
        {"token": raw, "client_id": application.client_id, "client_secret": "s3cret"},
    )
    assert revoked.status_code == 503
    assert "Retry-After" in revoked.headers
    assert AccessToken.objects.filter(token_checksum=token_cache.checksum_of(raw)).exists()
    assert client.get("/api/public/organizers").status_code == 200


def test_a_read_from_before_a_revocation_is_not_stored_after_it(application):
    """The request read the token, the revocation committed, then the request tries to cache it."""
    raw = mint_token(application=application)
    token = AccessToken.objects.select_related("user", "application").get(
        token_checksum=token_cache.checksum_of(raw)
    )
    token_cache.forget([token.token_checksum])
    token_cache.remember(token)
    assert token_cache.cached_token(raw) is None


def test_expired_copy_is_not_served(application):
    raw = mint_token(application=application)
    token = AccessToken.objects.select_related("user", "application").get(
        token_checksum=token_cache.checksum_of(raw)
    )
    token_cache.remember(token)
    assert token_cache.cached_token(raw) == token
    expired = _cached(raw)
    expired.expires = token.created  # already passed
    cache.set(token_cache.KEY_PREFIX + token.token_checksum, expired)
    assert token_cache.cached_token(raw) is None


def test_token_about_to_expire_is_not_cached(application):
    raw = mint_token(application=application, expires_in=3)
    token = AccessToken.objects.select_related("user", "application").get(
        token_checksum=token_cache.checksum_of(raw)
    )
    token_cache.remember(token)
    assert _cached(raw) is None


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_revocation_in_one_process_reaches_the_other(tmp_path):
    """Process A has the token cached; it is revoked through process B; A refuses it next."""
    application = ApplicationFactory()
    raw = mint_token(application=application, user=UserFactory())
    env = server_env(DATABASE_URL=database_url())
    ports = (free_port(), free_port())
    url = "http://127.0.0.1:{}/api/public/organizers"
    with (
        running(gunicorn_command(ports[0]), port=ports[0], env=env, log=tmp_path / "a.log"),
        running(gunicorn_command(ports[1]), port=ports[1], env=env, log=tmp_path / "b.log"),
    ):
        assert get(url.format(ports[0]), token=raw)[0] == 200
        assert get(url.format(ports[0]), token=raw)[0] == 200  # now from the cache
        revoked = _post_form(
            f"http://127.0.0.1:{ports[1]}/oauth/revoke_token",
            {"token": raw, "client_id": application.client_id, "client_secret": "s3cret"},
        )
        assert revoked == 200
        status, _, body = get(url.format(ports[0]), token=raw)
    assert status == 401, body


def _post_form(url: str, fields: dict[str, str]) -> int:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as response:
        return response.status

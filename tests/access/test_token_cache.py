"""Validated tokens served from the cache, and forgotten the moment the database disagrees."""

import time
import urllib.parse
import urllib.request
from datetime import timedelta

import pytest
from django.contrib.auth.models import update_last_login
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import AccessToken
from rest_framework.test import APIClient

from oauth_setup import token_cache
from oauth_setup.exceptions import TokenCacheUnavailable
from organizers.models import Membership
from tests.factories import ApplicationFactory, MembershipFactory, UserFactory
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
WEBHOOKS = "/api/public/organizers/{}/webhooks"  # owners and admins only


def _token_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return sum("oauth2_provider_accesstoken" in q["sql"] for q in captured.captured_queries)


def _cached(raw: str):
    return token_cache.cached_token(raw)


def _stored(raw: str):
    return AccessToken.objects.select_related("user", "application").get(
        token_checksum=token_cache.checksum_of(raw)
    )


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


def test_a_read_from_before_a_revocation_is_not_kept_after_it(application, monkeypatch):
    """The request reads the token, a revocation writes its marker, then the request ends."""
    from oauth2_provider.oauth2_validators import OAuth2Validator

    raw = mint_token(application=application)
    read = OAuth2Validator._load_access_token

    def read_then_revoked(self, token):
        loaded = read(self, token)
        token_cache.forget([loaded.token_checksum])  # the revocation's marker, not yet committed
        return loaded

    monkeypatch.setattr(OAuth2Validator, "_load_access_token", read_then_revoked)
    client = TokenClient(raw)
    assert client.get("/api/public/organizers").status_code == 200  # read before it: served
    assert _cached(raw) is None
    assert _token_queries(client, "/api/public/organizers") == 1


def test_a_marker_from_another_process_sends_the_copy_to_the_database(application):
    """Another process revoked the token: this one only sees the marker it left in the cache."""
    raw = mint_token(application=application)
    client = TokenClient(raw)
    assert client.get("/api/public/organizers").status_code == 200
    assert _cached(raw) is not None
    with connection.cursor() as cursor:  # deleted as another process would: no signal here
        cursor.execute(
            f"DELETE FROM {AccessToken._meta.db_table} WHERE token_checksum = %s",
            [token_cache.checksum_of(raw)],
        )
    assert client.get("/api/public/organizers").status_code == 200  # no marker: the copy serves
    caches["strict"].set(token_cache.marker_key(token_cache.checksum_of(raw)), "forgotten", 60)
    response = client.get("/api/public/organizers")
    assert (response.status_code, response.json()["error"]) == (401, "invalid_token")
    assert _cached(raw) is None


def test_a_cache_that_does_not_answer_serves_no_copy_nor_role(organizer, monkeypatch):
    client, _ = _member_client(organizer)
    url = EVENTS.format(organizer.id)

    def reads() -> tuple[int, int]:
        """The statements of a call that read the token, and those that read a membership."""
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        sqls = [q["sql"] for q in captured.captured_queries]
        return (
            sum(AccessToken._meta.db_table in sql for sql in sqls),
            sum(Membership._meta.db_table in sql for sql in sqls),
        )

    assert reads() == (1, 1)
    assert reads() == (0, 0)

    def unreachable(*args, **kwargs):
        raise ConnectionError("cache unreachable")

    monkeypatch.setattr("ticketing.api.throttling.count_and_check", unreachable)
    assert reads() == (1, 1)  # the database decides, and the limits fail open
    assert reads() == (1, 1)  # nor is anything kept while the cache is away
    monkeypatch.undo()
    assert reads() == (1, 1)
    assert reads() == (0, 0)


def test_a_copy_lives_no_longer_than_a_marker_written_after_its_read(settings, application):
    raw = mint_token(application=application)
    token = _stored(raw)
    token_cache.remember(token, read_at=time.monotonic())
    assert _cached(raw) == token
    token_cache.remember(token, read_at=time.monotonic() - settings.API_TOKEN_CACHE_SECONDS)
    assert _cached(raw) is None


def test_the_least_recently_used_copy_goes_first(application, monkeypatch):
    monkeypatch.setattr(token_cache, "MAX_TOKENS", 2)
    first, second, third = (mint_token(application=application) for _ in range(3))
    for raw in (first, second):
        token_cache.remember(_stored(raw), read_at=time.monotonic())
    assert _cached(first) is not None  # now used more recently than the second
    token_cache.remember(_stored(third), read_at=time.monotonic())
    assert _cached(second) is None
    assert _cached(first) is not None and _cached(third) is not None


def test_each_request_gets_its_own_instance(application):
    raw = mint_token(application=application)
    token_cache.remember(_stored(raw), read_at=time.monotonic())
    one, other = _cached(raw), _cached(raw)
    assert one == other and one is not other and one.application is not other.application


def test_expired_copy_is_not_served(application, monkeypatch):
    raw = mint_token(application=application)
    token_cache.remember(_stored(raw), read_at=time.monotonic())
    assert _cached(raw) is not None
    later = timezone.now() + timedelta(hours=3)  # the token lives two
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert _cached(raw) is None


def test_token_about_to_expire_is_not_cached(application):
    raw = mint_token(application=application, expires_in=3)
    token_cache.remember(_stored(raw), read_at=time.monotonic())
    assert _cached(raw) is None


# --- The roles a copy keeps ---------------------------------------------------------------------


def _role_reads(client, url, *, status: int = 200) -> int:
    """Statements of a call that read a membership; its status must be `status`."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == status, response.content
    return sum(Membership._meta.db_table in q["sql"] for q in captured.captured_queries)


def _member_client(organizer, *, role: str = "admin") -> tuple[TokenClient, Membership]:
    """A member's token through a platform application: the organizer's deletion leaves it."""
    membership = MembershipFactory(organizer=organizer, role=role)
    raw = mint_token(
        application=ApplicationFactory(organizer=None),
        user=membership.user,
        scope="public organizer",
    )
    return TokenClient(raw), membership


def _error(client, url) -> tuple[int, str]:
    response = client.get(url)
    return response.status_code, response.json()["error"]


def test_a_members_second_call_does_not_read_the_membership(organizer):
    client, _ = _member_client(organizer)
    url = EVENTS.format(organizer.id)
    assert _role_reads(client, url) == 1
    assert _role_reads(client, url) == 0


def test_roles_are_kept_per_organizer(organizer, other_organizer):
    client, membership = _member_client(organizer)
    MembershipFactory(user=membership.user, organizer=other_organizer, role="staff")
    for url in (EVENTS.format(organizer.id), EVENTS.format(other_organizer.id)):
        assert _role_reads(client, url) == 1
    assert _role_reads(client, WEBHOOKS.format(organizer.id)) == 0  # an admin there
    assert _error(client, WEBHOOKS.format(other_organizer.id)) == (403, "not_organizer_member")


def _move_to_another_user(membership: Membership) -> None:
    membership.user = UserFactory()
    membership.save()


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        pytest.param(Membership.delete, (403, "not_organizer_member"), id="membership removed"),
        pytest.param(_move_to_another_user, (403, "not_organizer_member"), id="moved"),
        pytest.param(lambda m: m.organizer.delete(), (404, "not_found"), id="organizer deleted"),
    ],
)
def test_a_kept_role_gives_way_at_once(change, refusal, organizer):
    client, membership = _member_client(organizer)
    url = EVENTS.format(organizer.id)
    assert _role_reads(client, url) == 1
    assert _role_reads(client, url) == 0
    change(membership)
    assert _error(client, url) == refusal


def test_a_lowered_role_is_seen_at_once(organizer):
    client, membership = _member_client(organizer, role="owner")
    url = WEBHOOKS.format(organizer.id)
    assert _role_reads(client, url) == 1
    membership.role = Membership.Role.STAFF
    membership.save()
    assert _error(client, url) == (403, "not_organizer_member")
    # Still a member: while the change's marker lives, the database answers each call.
    assert _role_reads(client, EVENTS.format(organizer.id)) == 1
    assert _role_reads(client, EVENTS.format(organizer.id)) == 1


def test_a_new_member_is_let_in_at_once(organizer):
    client, membership = _member_client(organizer)
    url = EVENTS.format(organizer.id)
    membership.delete()
    assert _error(client, url) == (403, "not_organizer_member")  # an absence is never kept
    MembershipFactory(user=membership.user, organizer=organizer, role="staff")
    assert _role_reads(client, url) == 1


def test_a_membership_change_the_cache_cannot_record_is_refused(settings, organizer):
    client, membership = _member_client(organizer)
    url = EVENTS.format(organizer.id)
    assert _role_reads(client, url) == 1
    settings.CACHES = {
        **settings.CACHES,
        "strict": {"BACKEND": f"{__name__}._UnreachableCache", "LOCATION": "unreachable"},
    }
    with pytest.raises(TokenCacheUnavailable), transaction.atomic():
        membership.delete()
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert client.get(url).status_code == 200


def test_a_marker_from_another_process_sends_the_role_to_the_database(organizer):
    """Another process removed the membership: this one only sees the marker it left."""
    client, membership = _member_client(organizer)
    url = EVENTS.format(organizer.id)
    assert _role_reads(client, url) == 1
    with connection.cursor() as cursor:  # deleted as another process would: no signal here
        cursor.execute(f"DELETE FROM {Membership._meta.db_table} WHERE id = %s", [membership.pk])
    assert _role_reads(client, url) == 0  # no marker: the kept role serves
    checksum = token_cache.checksum_of(client.token)
    caches["strict"].set(token_cache.marker_key(checksum), "forgotten", 60)
    assert _error(client, url) == (403, "not_organizer_member")


def test_a_role_lives_no_longer_than_a_marker_written_after_its_read(settings, organizer):
    client, _ = _member_client(organizer)
    checksum = token_cache.checksum_of(client.token)
    token_cache.remember(_stored(client.token), read_at=time.monotonic())
    roles = token_cache.KeptRoles(checksum, read_at=time.monotonic())
    roles.keep(organizer.id, "admin")
    assert roles.role_in(organizer.id) == "admin"
    stale = token_cache.KeptRoles(
        checksum, read_at=time.monotonic() - settings.API_TOKEN_CACHE_SECONDS
    )
    stale.keep(organizer.id, "admin")
    assert roles.role_in(organizer.id) is None


def test_roles_go_with_their_copy(organizer):
    client, _ = _member_client(organizer)
    checksum = token_cache.checksum_of(client.token)
    token_cache.remember(_stored(client.token), read_at=time.monotonic())
    roles = token_cache.KeptRoles(checksum, read_at=time.monotonic())
    roles.keep(organizer.id, "admin")
    token_cache.drop(checksum)
    assert roles.role_in(organizer.id) is None
    roles.keep(organizer.id, "admin")  # no copy to keep it with
    token_cache.remember(_stored(client.token), read_at=time.monotonic())
    assert roles.role_in(organizer.id) is None


def test_a_copy_keeps_a_bounded_number_of_roles(organizer, monkeypatch):
    monkeypatch.setattr(token_cache, "MAX_ROLES", 1)
    client, _ = _member_client(organizer)
    token_cache.remember(_stored(client.token), read_at=time.monotonic())
    roles = token_cache.KeptRoles(token_cache.checksum_of(client.token), read_at=time.monotonic())
    roles.keep(organizer.id, "admin")
    roles.keep(organizer.id + 1, "staff")
    roles.keep(organizer.id, "owner")  # a role already kept may change
    assert roles.role_in(organizer.id) == "owner"
    assert roles.role_in(organizer.id + 1) is None


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


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_membership_removed_in_one_process_reaches_the_other(tmp_path):
    """The server keeps the member's role; this process removes the membership; the server
    refuses the member's next call."""
    membership = MembershipFactory(role="staff")
    raw = mint_token(
        application=ApplicationFactory(organizer=membership.organizer),
        user=membership.user,
        scope="public organizer",
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}" + EVENTS.format(membership.organizer_id)
    env = server_env(DATABASE_URL=database_url())
    with running(gunicorn_command(port), port=port, env=env, log=tmp_path / "server.log"):
        assert get(url, token=raw)[0] == 200
        assert get(url, token=raw)[0] == 200  # now with the role the server kept
        membership.delete()
        status, _, body = get(url, token=raw)
    assert status == 403, body
    assert b"not_organizer_member" in body

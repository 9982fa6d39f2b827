"""Bearer-token API calls skip the browser's middleware (session, CSRF, user, messages);
everything else, the admin, the sign-in and the staff page included, keeps all of it."""

import pytest
from django.core import checks
from django.http import HttpResponse
from django.test import Client, RequestFactory

from oauth_setup import token_cache
from tests.support import TokenClient, mint_token
from ticketing.middleware import (
    AuthenticationMiddleware,
    CsrfViewMiddleware,
    MessageMiddleware,
    SessionMiddleware,
    is_bearer_api_call,
)

rf = RequestFactory()
BEARER = {"HTTP_AUTHORIZATION": "Bearer some-token"}


def _seen(request):
    """A view that answers which attributes the middleware left on its request."""
    names = [n for n in ("session", "user", "_messages") if hasattr(request, n)]
    return HttpResponse(",".join(names))


@pytest.mark.parametrize(
    ("path", "headers", "expected"),
    [
        ("/api/public/organizers", BEARER, True),
        ("/api/public/organizers", {"HTTP_AUTHORIZATION": "bearer some-token"}, True),
        ("/api/public/organizers", {}, False),
        ("/api/public/organizers", {"HTTP_AUTHORIZATION": "Basic dXNlcjpwdw=="}, False),
        ("/checkin/", BEARER, False),
        ("/admin/", BEARER, False),
        ("/oauth/token", BEARER, False),
    ],
)
def test_only_api_paths_with_a_bearer_header_are_bearer_api_calls(path, headers, expected):
    assert is_bearer_api_call(rf.get(path, **headers)) is expected


@pytest.mark.django_db
def test_a_bearer_api_call_gets_no_session_user_or_messages():
    chain = SessionMiddleware(AuthenticationMiddleware(MessageMiddleware(_seen)))
    assert chain(rf.get("/api/public/organizers", **BEARER)).content == b""
    assert chain(rf.get("/api/public/organizers")).content == b"session,user,_messages"
    assert chain(rf.get("/checkin/", **BEARER)).content == b"session,user,_messages"


def test_csrf_is_checked_on_everything_but_bearer_api_calls():
    middleware = CsrfViewMiddleware(_seen)
    api = rf.post("/api/public/organizers/1/events", **BEARER)
    assert middleware.process_view(api, _seen, (), {}) is None
    for request in (rf.post("/api/public/organizers/1/events"), rf.post("/checkin/", **BEARER)):
        refused = middleware.process_view(request, _seen, (), {})
        assert refused is not None and refused.status_code == 403


@pytest.mark.django_db
def test_the_real_sign_in_form_still_refuses_a_post_without_csrf_token_even_with_a_bearer():
    client = Client(enforce_csrf_checks=True)
    response = client.post("/oauth/login", {"username": "x", "password": "y"}, **BEARER)
    assert response.status_code == 403


@pytest.mark.django_db
def test_a_bearer_api_call_sets_no_cookie_and_varies_on_nothing_of_the_session(organizer_client):
    organizer_client.cookies["sessionid"] = "not-a-session"
    response = organizer_client.get("/api/public/organizers")
    assert response.status_code == 200
    assert response.cookies == {}
    assert "Cookie" not in response.get("Vary", "")


def test_admin_and_auth_checks_accept_the_subclasses():
    """The admin requires Django's session, auth and messages middleware (admin.E408-E410);
    subclasses satisfy it."""
    errors = [e for e in checks.run_checks() if e.id in ("admin.E408", "admin.E409", "admin.E410")]
    assert errors == []


@pytest.mark.django_db
def test_each_request_gets_its_own_copy_of_the_kept_token(application, member):
    """The kept token is copied, not unpickled, per request: what one request sets on its
    token, user or application never reaches the next."""
    raw = mint_token(application=application, user=member, scope="public organizer")
    assert TokenClient(raw).get("/api/public/organizers").status_code == 200  # now kept
    first = token_cache.cached_token(raw)
    first.scope, first.user.full_name, first.application.name = "x", "Changed", "Changed"
    second = token_cache.cached_token(raw)
    assert second is not first and second.user is not first.user
    assert (second.scope, second.user.full_name, second.application.name) == (
        "public organizer",
        member.full_name,
        application.name,
    )
    assert (second.user_id, second.application_id) == (member.id, application.id)

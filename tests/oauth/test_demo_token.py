"""`manage.py demo_token`: a newcomer's user token, by the real authorization-code flow."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from devtools.demo import demo_bootstrap
from tests.oauth.flow import stored_token
from tests.support import TokenClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings):
    settings.DEBUG = True
    return demo_bootstrap()


def _run(*args) -> str:
    out = StringIO()
    call_command("demo_token", *args, stdout=out)
    return out.getvalue().removesuffix("\n")


def test_demo_token_prints_a_working_user_token(demo):
    token = _run("--user", "staff", "--scope", "public organizer")
    assert "\n" not in token and len(token) >= 30
    stored = stored_token(token)
    assert stored.user == demo.users["staff"]
    assert stored.application == demo.organizers[0][1]
    assert stored.scope == "public organizer"
    me = TokenClient(token).get("/api/public/me")
    assert (me.status_code, me.json()["id"]) == (200, demo.users["staff"].id)
    organizer_id = demo.organizers[0][0].id
    events = TokenClient(token).get(f"/api/public/organizers/{organizer_id}/events")
    assert events.status_code == 200


def test_demo_token_json_is_the_token_response(demo):
    body = json.loads(_run("--user", "buyer", "--json"))
    assert set(body) == {
        "access_token",
        "token_type",
        "expires_in",
        "scope",
        "refresh_token",
        "created_at",
    }
    assert (body["token_type"], body["scope"], body["expires_in"]) == ("Bearer", "public", 7200)
    assert stored_token(body["access_token"]).user == demo.users["buyer"]


def test_demo_token_refuses_without_debug(demo, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="only with DEBUG on"):
        _run("--user", "staff")


def test_demo_token_names_an_unknown_user(demo):
    with pytest.raises(CommandError, match=r"No user 'nobody'; run `manage\.py bootstrap_demo`"):
        _run("--user", "nobody")


def test_demo_token_reports_a_refused_scope(demo):
    with pytest.raises(CommandError, match="invalid_scope"):
        _run("--user", "staff", "--scope", "admin")

"""`create_organizer` and `create_application`: what an operator types, what they get."""

import json
from io import StringIO

import pytest
from django.contrib.auth.hashers import check_password
from django.core.management import CommandError, call_command
from django.test import Client

from oauth_setup.models import Application
from organizers.models import Membership, Organizer
from tests.factories import OrganizerFactory, UserFactory

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_organizer_with_owner():
    owner = UserFactory(username="somchai")
    output = run(
        "create_organizer",
        "--name",
        " Bangkok Live ",
        "--slug",
        "bangkok-live",
        "--owner",
        "somchai",
    )
    organizer = Organizer.objects.get(slug="bangkok-live")
    assert organizer.name == "Bangkok Live"
    assert output == (
        f"Created organizer {organizer.id} (bangkok-live): Bangkok Live\nOwner: somchai\n"
    )
    membership = Membership.objects.get(organizer=organizer)
    assert (membership.user, membership.role) == (owner, "owner")


def test_create_organizer_without_owner():
    run("create_organizer", "--name", "Solo", "--slug", "solo", "--description", "Jazz nights")
    organizer = Organizer.objects.get(slug="solo")
    assert organizer.description == "Jazz nights"
    assert not organizer.memberships.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--slug", "taken"], "The slug 'taken' is taken."),
        (["--slug", "not a slug"], "slug: Enter a valid “slug”"),
        (["--slug", "fresh", "--owner", "ghost"], "There is no user named 'ghost'."),
    ],
)
def test_create_organizer_refusals_change_nothing(args, message):
    OrganizerFactory(slug="taken")
    with pytest.raises(CommandError) as error:
        run("create_organizer", "--name", "X", *args)
    assert str(error.value).startswith(message)
    assert Organizer.objects.count() == 1


def test_create_organizer_blank_name_is_refused():
    with pytest.raises(CommandError, match=r"name: This field cannot be blank\."):
        run("create_organizer", "--name", "  ", "--slug", "blank")
    assert not Organizer.objects.exists()


def test_create_application_prints_the_secret_once_and_stores_its_hash(organizer):
    output = run(
        "create_application",
        "--name",
        "Gate app",
        "--organizer",
        "bangkok-live",
        "--redirect-uri",
        "https://gate.example.com/callback",
        "--grant",
        "authorization-code",
        "--client-credentials",
    )
    application = Application.objects.get(name="Gate app")
    lines = dict(line.split(":", 1) for line in output.splitlines() if ":" in line)
    secret = lines["client_secret"].strip()
    assert lines["client_id"].strip() == application.client_id
    assert lines["Organizer"].strip() == "Bangkok Live"
    assert "never shown again" in output
    assert application.client_secret != secret
    assert check_password(secret, application.client_secret)
    assert application.organizer == organizer
    assert application.client_type == Application.CLIENT_CONFIDENTIAL
    assert application.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert application.allow_client_credentials is True
    assert application.redirect_uris == "https://gate.example.com/callback"

    # The printed credentials work at the token endpoint.
    response = Client().post(
        "/oauth/token",
        {
            "grant_type": "client_credentials",
            "client_id": application.client_id,
            "client_secret": secret,
        },
    )
    assert response.status_code == 200
    assert response.json()["scope"] == "public"
    assert "refresh_token" not in response.json()


def test_create_application_json_by_id_with_two_redirects(organizer):
    data = json.loads(
        run(
            "create_application",
            "--name",
            "Box office",
            "--organizer",
            str(organizer.id),
            "--redirect-uri",
            "https://a.example.com/cb",
            "--redirect-uri",
            "http://127.0.0.1:9/cb",
            "--grant",
            "authorization-code",
            "--json",
        )
    )
    application = Application.objects.get(pk=data["id"])
    assert data == {
        "id": application.id,
        "name": "Box office",
        "organizer_id": organizer.id,
        "client_id": application.client_id,
        "client_secret": data["client_secret"],
        "client_type": "confidential",
        "grant_type": "authorization-code",
        "client_credentials": False,
        "redirect_uris": ["https://a.example.com/cb", "http://127.0.0.1:9/cb"],
    }
    assert check_password(data["client_secret"], application.client_secret)


def test_create_platform_client_credentials_application(db):
    data = json.loads(
        run(
            "create_application",
            "--name",
            "Reports",
            "--organizer",
            "none",
            "--grant",
            "client-credentials",
            "--json",
        )
    )
    application = Application.objects.get(pk=data["id"])
    assert application.organizer is None
    assert application.authorization_grant_type == Application.GRANT_CLIENT_CREDENTIALS
    assert data["client_credentials"] is True


def test_create_public_application_has_no_secret(organizer):
    output = run(
        "create_application",
        "--name",
        "Mobile",
        "--organizer",
        "bangkok-live",
        "--redirect-uri",
        "http://127.0.0.1:7000/callback",
        "--grant",
        "authorization-code",
        "--public",
    )
    assert "client_secret: none (public client: use PKCE)" in output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--organizer", "nope", "--grant", "client-credentials"], "No organizer 'nope'"),
        (["--organizer", "99999999999", "--grant", "client-credentials"], "No organizer"),
        (
            ["--organizer", "none", "--grant", "authorization-code"],
            "redirect_uris: redirect_uris cannot be empty",
        ),
        (
            ["--organizer", "none", "--grant", "authorization-code", "--redirect-uri", "ftp://x/"],
            "redirect_uris:",
        ),
        (
            ["--organizer", "none", "--grant", "client-credentials", "--public"],
            "A public client has no secret",
        ),
    ],
)
def test_create_application_refusals_change_nothing(organizer, args, message):
    with pytest.raises(CommandError) as error:
        run("create_application", "--name", "X", *args)
    assert str(error.value).startswith(message), str(error.value)
    assert not Application.objects.exists()

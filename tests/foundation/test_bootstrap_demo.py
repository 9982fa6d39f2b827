"""`bootstrap_demo` prints exactly what CONTRACT §10 promises, and the data really is that."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from accounts.models import User
from checkin.models import CheckInLog
from events.models import CheckInType, Event, TicketType
from oauth_setup.models import Application
from organizers.models import Membership
from tickets.models import Order, Ticket

ROOT = Path(__file__).resolve().parents[2]


def _run_json() -> dict:
    out = io.StringIO()
    with override_settings(DEBUG=True):  # as under `make run`
        call_command("bootstrap_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def _env(**changes: str) -> dict:
    """This process's environment with `changes`, and none of the variables they replace."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SITE_URL", "HOST", "PORT", "DEBUG", "DJANGO_SETTINGS_MODULE"}
    }
    return {**env, **changes}


def _assert_contract_shape(data: dict) -> None:
    assert set(data) == {
        "base_url",
        "auth_url",
        "admin",
        "organizers",
        "users",
        "events",
        "ticket_types",
        "check_in_types",
    }
    assert data["base_url"].endswith("/api/public")
    assert data["base_url"].startswith(data["auth_url"])
    assert set(data["admin"]) == {"username", "password"}
    assert len(data["organizers"]) == 2
    for organizer in data["organizers"]:
        assert set(organizer) == {"id", "name", "application"}
        assert isinstance(organizer["id"], int)
        assert set(organizer["application"]) == {"client_id", "client_secret", "redirect_uri"}
        assert all(isinstance(v, str) and v for v in organizer["application"].values())
    assert set(data["users"]) == {"staff", "buyer", "outsider"}
    for user in data["users"].values():
        assert set(user) == {"id", "username", "password", "email"}
        assert isinstance(user["id"], int)
    assert set(data["events"]) == {"simple", "multi", "draft", "ended", "other_organizer"}
    assert set(data["ticket_types"]) == {
        "simple_regular",
        "simple_vip",
        "simple_api_limited",
        "multi_regular",
        "multi_vip",
    }
    assert set(data["check_in_types"]) == {"day1", "day2", "vip_lounge"}
    for group in ("events", "ticket_types", "check_in_types"):
        assert all(isinstance(v, int) for v in data[group].values())


@pytest.mark.django_db
def test_bootstrap_demo_json_matches_contract_and_is_idempotent():
    first = _run_json()
    _assert_contract_shape(first)
    counts = [M.objects.count() for M in (User, Event, TicketType, Ticket, Order, CheckInLog)]

    second = _run_json()

    assert second == first
    assert [
        M.objects.count() for M in (User, Event, TicketType, Ticket, Order, CheckInLog)
    ] == counts


@pytest.mark.django_db
def test_bootstrap_demo_data_has_the_stated_properties():
    data = _run_json()
    organizer_1 = data["organizers"][0]
    staff = User.objects.get(id=data["users"]["staff"]["id"])
    buyer = User.objects.get(id=data["users"]["buyer"]["id"])
    outsider = User.objects.get(id=data["users"]["outsider"]["id"])

    assert staff.check_password(data["users"]["staff"]["password"])
    assert User.objects.get(username=data["admin"]["username"]).is_superuser
    assert Membership.objects.get(user=staff).organizer_id == organizer_1["id"]
    assert Membership.objects.get(user=staff).role == "admin"

    app = Application.objects.get(client_id=organizer_1["application"]["client_id"])
    assert app.organizer_id == organizer_1["id"]
    assert app.client_type == "confidential"
    assert app.allows_grant_type("authorization-code") and app.allows_grant_type(
        "client-credentials"
    )
    assert app.redirect_uris.split() == [  # the printed callback first, then the docs'
        "http://127.0.0.1:8765/callback",
        f"{data['auth_url']}/api/public/docs/oauth2-redirect.html",
    ]
    assert app.client_secret != organizer_1["application"]["client_secret"]  # hashed at rest
    other = Event.objects.get(id=data["events"]["other_organizer"])
    assert other.organizer_id == data["organizers"][1]["id"]

    simple = Event.objects.get(id=data["events"]["simple"])
    assert simple.effective_status == "active" and not simple.check_in_types.exists()
    assert TicketType.objects.get(id=data["ticket_types"]["simple_regular"]).quantity == 1000
    assert TicketType.objects.get(id=data["ticket_types"]["simple_api_limited"]).api_quota == 3
    simple_tickets = Ticket.objects.filter(event=simple)
    assert simple_tickets.count() >= 30
    assert {"active", "used", "revoked"} <= set(simple_tickets.values_list("status", flat=True))
    buyer_orders = Order.objects.filter(event=simple, buyer=buyer)
    assert set(buyer_orders.values_list("status", flat=True)) == {"paid", "pending", "cancelled"}
    assert set(
        Ticket.objects.filter(order__status="cancelled", order__buyer=buyer).values_list(
            "status", flat=True
        )
    ) == {"revoked"}
    for ticket_type in TicketType.objects.all():  # counters agree with the tickets
        live = ticket_type.tickets.exclude(status="revoked")
        assert ticket_type.sold_count == live.count()
        assert ticket_type.api_sold_count == live.filter(issued_via_api=True).count()

    multi = Event.objects.get(id=data["events"]["multi"])
    assert multi.effective_status == "active"
    assert list(multi.check_in_types.values_list("id", flat=True)) == [
        data["check_in_types"]["day1"],
        data["check_in_types"]["day2"],
        data["check_in_types"]["vip_lounge"],
    ]
    vip_lounge = CheckInType.objects.get(id=data["check_in_types"]["vip_lounge"])
    assert list(vip_lounge.ticket_types.values_list("id", flat=True)) == [
        data["ticket_types"]["multi_vip"]
    ]
    assert {data["ticket_types"]["multi_regular"], data["ticket_types"]["multi_vip"]} == set(
        Ticket.objects.filter(event=multi).values_list("ticket_type_id", flat=True)
    )

    assert Event.objects.get(id=data["events"]["draft"]).status == "draft"
    assert Event.objects.get(id=data["events"]["ended"]).effective_status == "ended"
    for key in ("draft", "ended"):
        assert (
            TicketType.objects.filter(event_id=data["events"][key], status="on_sale").count() == 1
        )

    assert not Membership.objects.filter(user=outsider).exists()
    assert not Order.objects.filter(buyer=outsider).exists()
    assert not Ticket.objects.filter(holder=outsider).exists()
    assert not Ticket.objects.filter(email__iexact=outsider.email).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_bootstrap_demo_json_stdout_is_one_object_in_a_real_process():
    settings_dict = connection.settings_dict
    url = (
        f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
        f"/{settings_dict['NAME']}"
    )
    # By hand, on another port than make run's: the printed URLs follow HOST and PORT.
    env = _env(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="ticketing.settings.base",
        HOST="localhost",
        PORT="8123",
    )
    runs = [
        subprocess.run(
            [sys.executable, "manage.py", "bootstrap_demo", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        for _ in range(2)
    ]
    first, second = (json.loads(run.stdout) for run in runs)
    _assert_contract_shape(first)
    assert first == second
    assert (first["auth_url"], first["base_url"]) == (
        "http://localhost:8123",
        "http://localhost:8123/api/public",
    )


@pytest.mark.django_db
def test_bootstrap_demo_refuses_when_debug_is_off():
    out = io.StringIO()

    with pytest.raises(CommandError) as refused:
        call_command("bootstrap_demo", "--json", stdout=out)

    assert str(refused.value) == (
        "DEBUG is off, so this looks like a production site, and the demo creates the superuser "
        "'admin' with a published password. Nothing was created. If this site is a demo, run "
        "again with --i-know-this-is-a-demo."
    )
    assert out.getvalue() == ""
    assert not User.objects.exists()


@pytest.mark.django_db
def test_bootstrap_demo_runs_with_debug_off_when_told_the_site_is_a_demo():
    out = io.StringIO()

    call_command("bootstrap_demo", "--json", "--i-know-this-is-a-demo", stdout=out)

    data = json.loads(out.getvalue())
    _assert_contract_shape(data)
    assert User.objects.get(username=data["admin"]["username"]).is_superuser


def test_bootstrap_demo_refuses_under_production_settings_in_a_real_process(tmp_path):
    env = _env(
        DJANGO_SETTINGS_MODULE="ticketing.settings.production",
        SECRET_KEY="a-production-secret-key-for-this-test-only-0123456789",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",  # refused before any query
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
    )

    run = subprocess.run(
        [sys.executable, "manage.py", "bootstrap_demo", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 1
    assert run.stdout == ""
    assert "run again with --i-know-this-is-a-demo" in run.stderr


@pytest.mark.parametrize(
    ("env", "site_url"),
    [
        ({}, "http://127.0.0.1:8000"),
        ({"PORT": "8123"}, "http://127.0.0.1:8123"),
        ({"HOST": "localhost", "PORT": "8123"}, "http://localhost:8123"),
        ({"SITE_URL": "https://demo.example.com/", "PORT": "8123"}, "https://demo.example.com"),
    ],
)
def test_site_url_follows_host_and_port_unless_set(env, site_url):
    run = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.SITE_URL)"],
        cwd=ROOT,
        env=_env(DJANGO_SETTINGS_MODULE="ticketing.settings.base", **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert run.stdout == f"{site_url}\n"

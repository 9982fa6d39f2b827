"""The staff check-in page (CONTRACT §15) on the server side: who gets it, what it is configured
with, and the token its script calls the API with, under the API's rules (§3)."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import AccessToken

from checkin.models import CheckInLog
from checkin.services.page_tokens import CLIENT_ID, TOKEN_SECONDS
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support import TokenClient
from tickets.models import Ticket

PAGE = "/checkin/"


@pytest.fixture
def gate(organizer, other_organizer):
    staff = UserFactory(username="gate")
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    multi = EventFactory(organizer=organizer, title="Two Days")
    day1 = CheckInTypeFactory(event=multi, name="Day 1")
    EventFactory(organizer=organizer, title="Draft", status="draft")
    EventFactory(
        organizer=organizer,
        title="Over",
        start_at=timezone.now() - timedelta(days=2),
        end_at=timezone.now() - timedelta(days=1),
    )
    other = EventFactory(organizer=other_organizer, title="Other Fest")
    regular = TicketTypeFactory(event=event, name="Regular")
    ticket = TicketFactory(event=event, ticket_type=regular, reference_code="GATE0001")
    foreign = TicketFactory(
        event=other,
        ticket_type=TicketTypeFactory(event=other),
        reference_code="OTHER001",
    )
    return staff, event, multi, day1, other, ticket, foreign


def _config(response):
    match = re.search(
        r'<script id="checkin-config" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    return json.loads(match.group(1))


@pytest.mark.django_db
def test_anonymous_is_sent_to_the_oauth_login_page(client):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={PAGE}"


@pytest.mark.django_db
def test_a_user_of_no_organizer_is_refused_clearly(client):
    client.force_login(UserFactory(username="outsider"))

    response = client.get(PAGE)

    assert response.status_code == 403
    assert "This page is for organizer staff" in response.content.decode()
    assert "not a member of any organizer" in response.content.decode()


@pytest.mark.django_db
def test_page_offers_the_members_active_events_with_their_check_in_types(client, gate):
    staff, event, multi, day1, *_ = gate
    client.force_login(staff)

    response = client.get(PAGE)

    assert response.status_code == 200
    config = _config(response)
    soonest_first = sorted([event, multi], key=lambda e: (e.start_at, e.pk))
    assert [(e["id"], e["title"]) for e in config["events"]] == [
        (e.pk, e.title) for e in soonest_first
    ]  # not the draft, the ended or the other organizer's event
    by_id = {e["id"]: e for e in config["events"]}
    assert by_id[multi.pk]["check_in_types"] == [{"id": day1.pk, "name": "Day 1"}]
    assert by_id[event.pk]["organizer_id"] == event.organizer_id
    assert config["labels"]["admitted"] == "Admitted"
    assert config["time_zone"] == "Asia/Bangkok"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "label", "locale"),
    [
        ("th", "5 ม.ค. 2574 19:00", "th-TH-u-ca-buddhist"),  # Buddhist era: 2031 + 543
        ("en", "5 Jan 2031 19:00", "en-GB-u-ca-gregory"),
    ],
)
@time_machine.travel(datetime(2030, 12, 20, tzinfo=UTC), tick=True)  # the event is to come
def test_event_label_and_times_follow_the_pages_language_and_calendar(
    client, organizer, language, label, locale
):
    """The event's start as the ticket page and email write it (ticketing.dates), and the
    script's locale for the times it shows, so a Thai page never mixes in a Gregorian year."""
    staff = UserFactory(username="gate")
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(
        organizer=organizer,
        title="New Year Run",
        start_at=datetime(2031, 1, 5, 12, 0, tzinfo=UTC),  # 19:00 in Bangkok
        end_at=datetime(2031, 1, 5, 16, 0, tzinfo=UTC),
    )
    client.force_login(staff)

    response = client.get(PAGE, HTTP_ACCEPT_LANGUAGE=language)

    assert response["Content-Language"] == language
    config = _config(response)
    assert [(e["id"], e["starts"]) for e in config["events"]] == [(event.pk, label)]
    assert config["locale"] == locale
    assert f"New Year Run · {label} · Bangkok Live</option>" in response.content.decode()


@pytest.mark.django_db
def test_page_loads_nothing_from_another_site_and_sends_a_csp(client, gate):
    client.force_login(gate[0])

    response = client.get(PAGE)

    html = response.content.decode()
    assert not re.search(r'(src|href)="(https?:)?//', html)
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "connect-src 'self'" in csp
    assert "'unsafe-inline'" not in csp
    assert response["Permissions-Policy"].startswith("camera=(self)")
    assert "no-store" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]


@pytest.mark.django_db
def test_page_decoder_and_its_wasm_are_served_here_with_their_types(client, gate, settings):
    """Browsers with no BarcodeDetector read QR codes with the vendored zxing-wasm: its script
    and .wasm from this service (the CSP allows no other origin), the .wasm as application/wasm
    (streaming compilation refuses any other type), compiled under 'wasm-unsafe-eval' only.
    Served by WhiteNoise, as in production, from the app's static folder (no collectstatic)."""
    settings.WHITENOISE_USE_FINDERS = True
    client.force_login(gate[0])

    response = client.get(PAGE)

    config = _config(response)
    folder = "/static/checkin_page/vendor/zxing-wasm-3.1.4/"
    assert config["decoder_url"] == folder + "zxing_reader.js"
    assert config["decoder_wasm_url"] == folder + "zxing_reader.wasm"
    csp = response["Content-Security-Policy"].split("; ")
    script_src = [d for d in csp if d.startswith("script-src")]
    assert script_src == ["script-src 'self' 'wasm-unsafe-eval'"]
    script = Client().get(config["decoder_url"])
    assert script.status_code == 200
    assert script["Content-Type"].startswith("text/javascript")
    assert b"ZXingWASM" in b"".join(script.streaming_content)
    wasm = Client().get(config["decoder_wasm_url"])
    assert wasm.status_code == 200
    assert wasm["Content-Type"] == "application/wasm"
    assert b"".join(wasm.streaming_content)[:4] == b"\0asm"
    assert Client().get("/static/checkin_page/vendor/jsqr-1.4.0/jsQR.js").status_code == 404


@pytest.mark.django_db
def test_token_needs_the_session_and_csrf(gate):
    staff = gate[0]
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)

    assert client.post(reverse("checkin_page:token")).status_code == 403  # no CSRF token
    assert client.get(reverse("checkin_page:token")).status_code == 405
    page = client.get(PAGE)
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.content.decode()).group(1)

    response = client.post(reverse("checkin_page:token"), HTTP_X_CSRFTOKEN=csrf)

    assert response.status_code == 200
    body = response.json()
    assert (body["token_type"], body["expires_in"]) == ("Bearer", TOKEN_SECONDS)
    token = AccessToken.objects.get(token=body["access_token"])
    assert (token.user, token.scope, token.application.client_id) == (staff, "check-in", CLIENT_ID)
    assert token.application.organizer is None  # a platform application: never a mismatch
    left = (token.expires - timezone.now()).total_seconds()
    assert TOKEN_SECONDS - 60 < left <= TOKEN_SECONDS


@pytest.mark.django_db
def test_token_of_a_user_of_no_organizer_is_refused(client):
    client.force_login(UserFactory(username="outsider"))

    response = client.post(reverse("checkin_page:token"))

    assert response.status_code == 403
    assert response.json()["error"] == "not_organizer_member"
    assert not AccessToken.objects.exists()


@pytest.mark.django_db
def test_the_pages_token_checks_in_for_its_organizer_only(client, gate):
    staff, event, _, _, other, ticket, foreign = gate
    client.force_login(staff)
    api = TokenClient(client.post(reverse("checkin_page:token")).json()["access_token"])
    base = "/api/public/organizers/{}/events/{}/tickets/checkin"

    own = api.post(base.format(event.organizer_id, event.pk), {"reference_code": "gate0001"})
    theirs = api.post(base.format(other.organizer_id, other.pk), {"reference_code": "OTHER001"})

    assert own.status_code == 200 and own.json()["ticket"]["id"] == ticket.pk
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    assert theirs.status_code == 403 and theirs.json()["error"] == "not_organizer_member"
    foreign.refresh_from_db()
    assert foreign.status == Ticket.Status.ACTIVE
    stats = api.get(f"/api/public/organizers/{event.organizer_id}/events/{event.pk}/check_in_stats")
    assert stats.status_code == 200 and stats.json()["tickets"]["used"] == 1


@pytest.mark.django_db
def test_signing_out_revokes_the_pages_tokens(client, gate):
    staff, event, *_ = gate
    client.force_login(staff)
    raw = client.post(reverse("checkin_page:token")).json()["access_token"]
    api = TokenClient(raw)
    stats = f"/api/public/organizers/{event.organizer_id}/events/{event.pk}/check_in_stats"
    assert api.get(stats).status_code == 200

    client.post(reverse("logout"))

    assert not AccessToken.objects.filter(token=raw).exists()
    assert api.get(stats).status_code == 401


@pytest.mark.django_db
def test_last_check_in_names_who_admitted_the_ticket_for_members_only(client, gate):
    staff, event, _, _, other, ticket, foreign = gate
    client.force_login(staff)
    api = TokenClient(client.post(reverse("checkin_page:token")).json()["access_token"])
    api.post(
        f"/api/public/organizers/{event.organizer_id}/events/{event.pk}/tickets/checkin",
        {"reference_code": "GATE0001"},
    )
    ticket.refresh_from_db()
    url = reverse("checkin_page:last_check_in")

    found = client.get(url, {"event_id": event.pk, "ticket_id": ticket.pk})

    assert found.json() == {
        "success": True,
        "at": timezone.localtime(ticket.used_at).isoformat(timespec="seconds"),
        "by": f"{staff}, Staff check-in page",
    }
    CheckInLog.objects.create(ticket=foreign, action="check_in", at=timezone.now())
    assert client.get(url, {"event_id": other.pk, "ticket_id": foreign.pk}).status_code == 404
    assert client.get(url, {"event_id": event.pk, "ticket_id": "x"}).status_code == 404
    # A digit that int() refuses ("²".isdigit() is true) is malformed too, not a 500.
    assert client.get(url, {"event_id": "\u00b2", "ticket_id": ticket.pk}).status_code == 404

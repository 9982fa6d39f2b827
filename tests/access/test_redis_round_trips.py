"""One Redis round trip per API request: the rate-limit counters and the token's revocation
marker travel in one script (issue 14; ticketing.api.throttling, oauth_setup.token_cache)."""

from contextlib import contextmanager

import pytest
from django.core.cache import caches
from django.test import Client, override_settings
from redis.connection import AbstractConnection

from oauth_setup import token_cache
from tests.factories import EventFactory, TicketFactory, WebhookEndpointFactory
from tests.oauth.flow import stored_token
from tests.oauth.support import wait_for_fresh_window
from tests.support import TokenClient, mint_token
from ticketing.api.throttling import token_rate_key

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

EVENTS = "/api/public/organizers/{}/events"


@contextmanager
def _round_trips():
    """Every command or pipeline redis-py sends to the server, as it leaves the connection."""
    sent: list[bytes] = []
    original = AbstractConnection.send_packed_command

    def counting(self, command, check_health=True):
        sent.append(command if isinstance(command, bytes) else b"".join(command))
        return original(self, command, check_health)

    AbstractConnection.send_packed_command = counting
    try:
        yield sent
    finally:
        AbstractConnection.send_packed_command = original


@pytest.fixture(autouse=True)
def _script_loaded(application):
    """Redis learns the script once per server (EVALSHA's first miss loads it): not counted."""
    response = TokenClient(mint_token(application=application)).get("/api/public/organizers")
    assert response.status_code == 200


def _one_trip(client, url, status=200, trips=1):
    with _round_trips() as sent:
        response = client.get(url)
    assert response.status_code == status, response.content
    assert len(sent) == trips, sent
    assert all(b"EVALSHA" in command for command in sent)
    return response


def test_a_token_seen_first_costs_one_round_trip(application, organizer):
    raw = mint_token(application=application)
    _one_trip(TokenClient(raw), EVENTS.format(organizer.id))
    assert token_cache.cached_token(raw) is not None  # and the next call is served from it


def test_a_cached_token_costs_one_round_trip(application, organizer):
    client = TokenClient(mint_token(application=application))
    for _ in range(3):
        _one_trip(client, EVENTS.format(organizer.id))


def test_me_and_its_own_limit_cost_one_round_trip(application, member):
    client = TokenClient(mint_token(application=application, user=member))
    _one_trip(client, "/api/public/me")
    _one_trip(client, "/api/public/me")


def test_a_marked_token_is_looked_up_within_the_same_round_trip(application, organizer):
    raw = mint_token(application=application)
    client = TokenClient(raw)
    _one_trip(client, EVENTS.format(organizer.id))
    caches["strict"].set(token_cache.marker_key(token_cache.checksum_of(raw)), "forgotten", 60)
    _one_trip(client, EVENTS.format(organizer.id))  # the database says the token is still valid


def test_a_request_without_a_token_is_refused_before_any_round_trip():
    _one_trip(Client(), "/api/public/organizers", status=401, trips=0)


@override_settings(API_TOKEN_CACHE_SECONDS=0)
def test_without_the_token_cache_the_limit_alone_costs_one_round_trip(application, organizer):
    client = TokenClient(mint_token(application=application))
    _one_trip(client, EVENTS.format(organizer.id))


@override_settings(API_RATE_LIMIT="2/m")
def test_the_limit_counted_with_the_marker_still_answers_429(application, organizer, member):
    raw = mint_token(application=application, user=member, scope="public organizer")
    client = TokenClient(raw)
    wait_for_fresh_window(token_rate_key(stored_token(raw)), margin=5)
    statuses = [client.get(EVENTS.format(organizer.id)).status_code for _ in range(2)]
    limited = _one_trip(client, EVENTS.format(organizer.id), status=429)
    assert statuses == [200, 200]
    assert limited.json()["error"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 60


@pytest.mark.parametrize("with_endpoint", [False, True], ids=["no_webhook", "webhook"])
def test_a_scan_at_the_gate_costs_one_round_trip(application, organizer, with_endpoint):
    """Whether anyone wants the check-in as a webhook is known to the process, not asked of
    Redis: the gate's request still makes only the token-and-limit trip."""
    event = EventFactory(organizer=organizer)
    first, second = TicketFactory.create_batch(2, event=event)
    if with_endpoint:
        WebhookEndpointFactory(organizer=organizer, event_types=["ticket.checked_in"])
    client = TokenClient(mint_token(application=application))
    scan = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets/checkin"
    client.post(scan, {"reference_code": first.reference_code})  # the process learns both
    with _round_trips() as sent:
        response = client.post(scan, {"reference_code": second.reference_code})
    assert response.status_code == 200, response.content
    assert response.json()["ticket"]["status"] == "used"
    assert len(sent) == 1, sent


def test_a_client_credentials_token_costs_one_round_trip(application):
    """Its per-address count and the address's failed authentications, read together."""
    application.client_secret = "s3cret"
    application.save()
    token_request = {
        "grant_type": "client_credentials",
        "client_id": application.client_id,
        "client_secret": "s3cret",
    }
    Client().post("/oauth/token", token_request)  # the secret now has the preferred hash
    with _round_trips() as sent:
        response = Client().post("/oauth/token", token_request)
    assert response.status_code == 200, response.content
    assert len(sent) == 1 and b"EVALSHA" in sent[0], sent

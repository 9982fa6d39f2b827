"""SSRF (CONTRACT §13): with WEBHOOK_ALLOW_PRIVATE_URLS off, as in production, a webhook URL
must be https and resolve only to public addresses, when registered and when delivered to."""

import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from tests.factories import MembershipFactory, UserFactory
from tests.support import TokenClient, mint_token
from webhooks import network
from webhooks.delivering import webhook_delivery_attempt
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.services import webhook_endpoint_ping

from .helpers import endpoint_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def production_rules(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False


@pytest.fixture
def owner_client(organizer, application):
    owner = UserFactory(username="owner")
    MembershipFactory(user=owner, organizer=organizer, role="owner")
    return TokenClient(mint_token(application=application, user=owner, scope="public organizer"))


def _resolving(monkeypatch, addresses: dict[str, list[str]]):
    real = network.resolve
    monkeypatch.setattr(
        network, "resolve", lambda host, port: addresses.get(host) or real(host, port)
    )


@pytest.mark.parametrize(
    "url, reason",
    [
        ("https://127.0.0.1/hooks", "it points at a loopback address"),
        ("https://127.8.9.10:8443/hooks", "it points at a loopback address"),
        ("https://10.0.0.1/hooks", "it points at a private address"),
        ("https://10.255.1.2/hooks", "it points at a private address"),
        ("https://192.168.1.1/hooks", "it points at a private address"),
        ("https://169.254.169.254/latest/meta-data", "it points at a link-local address"),
        ("https://[::1]/hooks", "it points at a loopback address"),
        ("https://[::ffff:10.0.0.1]/hooks", "it points at a private address"),
        ("https://[fe80::1]/hooks", "it points at a link-local address"),
        ("https://0.0.0.0/hooks", "it points at a private address"),
        ("https://100.64.0.1/hooks", "it points at a reserved address"),
        ("https://localhost/hooks", "it points at a loopback address"),
        ("https://intranet.example.test/hooks", "it points at a private address"),
        ("http://93.184.215.14/hooks", "it must be an https URL"),
        ("https://nowhere.invalid/hooks", "its host name does not resolve"),
    ],
)
def test_refused_urls_are_a_400(url, reason, organizer, owner_client, monkeypatch):
    _resolving(monkeypatch, {"intranet.example.test": ["10.20.30.40"]})

    response = owner_client.post(
        f"/api/public/organizers/{organizer.id}/webhooks",
        {"url": url, "event_types": ["*"]},
        format="json",
    )

    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "invalid_parameters",
        "message": f"The webhook URL is refused: {reason}",
        "fields": {"url": [reason]},
    }
    assert not WebhookEndpoint.objects.exists()


def test_a_name_with_one_private_address_among_public_ones_is_refused(monkeypatch):
    _resolving(monkeypatch, {"mixed.example.test": ["93.184.215.14", "10.0.0.7"]})
    with pytest.raises(network.WebhookUrlRefused) as refused:
        network.target_check("https://mixed.example.test/x", allow_private=False)
    assert refused.value.reason == "it points at a private address"


def test_a_public_name_is_accepted_and_pinned_to_its_address(monkeypatch):
    _resolving(monkeypatch, {"hooks.example.test": ["93.184.215.14"]})
    target = network.target_check("https://hooks.example.test:8443/in?x=1", allow_private=False)
    assert target == network.Target("https", "hooks.example.test", 8443, "/in?x=1", "93.184.215.14")


def test_an_address_that_turned_private_is_refused_at_delivery(
    organizer, receiver, settings, monkeypatch
):
    """A name registered while public that now resolves to 127.0.0.1 (DNS rebinding): the
    attempt is refused and logged, and the receiver listening there hears nothing."""
    name = "rebinding.example.test"
    _resolving(monkeypatch, {name: ["93.184.215.14"]})
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # to register an http URL with the receiver's port
    endpoint, _ = endpoint_for(receiver, organizer)
    endpoint.url = f"https://{name}:{receiver.port}/hooks"
    endpoint.save()
    webhook_endpoint_ping(endpoint=endpoint)
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    _resolving(monkeypatch, {name: ["127.0.0.1"]})
    delivery = WebhookDelivery.objects.get()

    webhook_delivery_attempt(delivery_id=delivery.pk)

    attempt = WebhookAttempt.objects.get()
    assert (attempt.status_code, attempt.error) == (
        None,
        "URL refused: it points at a loopback address",
    )
    assert attempt.next_retry_at is not None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count) == ("pending", 1)
    assert receiver.requests == []


def test_delivery_connects_to_the_checked_address_with_the_urls_host(
    organizer, receiver, settings, monkeypatch
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    name = "receiver.example.test"
    _resolving(monkeypatch, {name: ["127.0.0.1"]})
    endpoint, _ = endpoint_for(receiver, organizer)
    endpoint.url = f"http://{name}:{receiver.port}/hooks"
    endpoint.save()
    webhook_endpoint_ping(endpoint=endpoint)

    webhook_delivery_attempt(delivery_id=WebhookDelivery.objects.get().pk)

    [request] = receiver.requests
    assert request["headers"]["Host"] == f"{name}:{receiver.port}"
    assert WebhookDelivery.objects.get().status == "delivered"


def test_production_settings_refuse_private_urls_and_development_allows_them():
    """`make run` (DEBUG on) reaches a receiver on 127.0.0.1; production settings do not."""

    def allowed(module: str, **env) -> str:
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("DJANGO_", "PYTEST_", "WEBHOOK_")) and key != "DEBUG"
        }
        environment.update(DJANGO_SETTINGS_MODULE=module, SECRET_KEY="x" * 50, **env)
        return subprocess.run(
            [
                sys.executable,
                "-c",
                "import django; django.setup(); from django.conf import settings; "
                "print(settings.WEBHOOK_ALLOW_PRIVATE_URLS)",
            ],
            cwd=django_settings.BASE_DIR,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()

    assert allowed("ticketing.settings.production") == "False"
    assert allowed("ticketing.settings.base") == "True"
    assert allowed("ticketing.settings.base", DEBUG="false") == "False"

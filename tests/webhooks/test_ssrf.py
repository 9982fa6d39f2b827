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


WHITESPACE = "it contains whitespace or a control character"
LOOPBACK = "it points at a loopback address"
PRIVATE = "it points at a private address"
LINK_LOCAL = "it points at a link-local address"


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
        ("https://[fec0::1]/hooks", PRIVATE),  # site-local, deprecated (RFC 3879)
        ("https://[feff:ffff::1]/hooks", PRIVATE),  # the last of fec0::/10
        ("https://sitelocal.example.test/hooks", PRIVATE),
        ("https://0.0.0.0/hooks", "it points at a private address"),
        ("https://100.64.0.1/hooks", "it points at a reserved address"),
        ("https://localhost/hooks", "it points at a loopback address"),
        ("https://intranet.example.test/hooks", "it points at a private address"),
        ("http://93.184.215.14/hooks", "it must be an https URL"),
        ("https://nowhere.invalid/hooks", "its host name does not resolve"),
        # Port 0 is no port: it was taken as the scheme's default.
        ("https://93.184.215.14:0/hooks", "its port must be from 1 to 65535"),
        # Whitespace and control characters anywhere, also those urlsplit drops (tab, CR, LF)
        # or strips (leading C0 and space), which made the URL stored differ from the one used.
        ("https://93.184.215.14/ho oks", WHITESPACE),
        ("https://93.184.215.14/hooks ", WHITESPACE),
        (" https://93.184.215.14/hooks", WHITESPACE),
        ("https://93.184.215.14/hooks\t", WHITESPACE),
        ("https://93.184.215.14\t/hooks", WHITESPACE),
        ("https://93.184.215.14/hooks\r\nX-Injected: 1", WHITESPACE),
        ("\nhttps://93.184.215.14/hooks", WHITESPACE),
        ("https://93.184.215.14/\x01hooks", WHITESPACE),
        ("\x1fhttps://93.184.215.14/hooks", WHITESPACE),
        ("https://93.184.215.14/hooks\x7f", WHITESPACE),
        ("https://93.184.215.14/hooks\x85", WHITESPACE),
        ("https://93.184.215.14/hooks\u00a0", WHITESPACE),
        ("https://93.184.215.14/hooks\u200b", WHITESPACE),
        ("https://93.184.215.14/hooks\u2028", WHITESPACE),
        ("https://93.184.215.14/hooks\u2029", WHITESPACE),
        ("https://hooks.exa mple.com/hooks", WHITESPACE),
        # IPv6 addresses that carry a private or loopback IPv4 address are judged by it.
        ("https://[2002:7f00:1::1]/hooks", LOOPBACK),  # 6to4 of 127.0.0.1
        ("https://[2002:a00:1::]/hooks", PRIVATE),  # 6to4 of 10.0.0.1
        ("https://[2002:a9fe:a9fe::1]/hooks", LINK_LOCAL),  # 6to4 of 169.254.169.254
        ("https://[64:ff9b::7f00:1]/hooks", LOOPBACK),  # NAT64 of 127.0.0.1
        ("https://[64:ff9b::192.168.1.1]/hooks", PRIVATE),
        ("https://[64:ff9b::a9fe:a9fe]/hooks", LINK_LOCAL),
        ("https://[64:ff9b:1::7f00:1]/hooks", LOOPBACK),  # local-use NAT64 (RFC 8215)
        ("https://[2001:0:5db8:d70e::80ff:fffe]/hooks", LOOPBACK),  # Teredo client 127.0.0.1
        ("https://[2001:0:7f00:1::a247:28f1]/hooks", LOOPBACK),  # Teredo server 127.0.0.1
        ("https://[::ffff:127.0.0.1]/hooks", LOOPBACK),  # IPv4-mapped
        ("https://[::ffff:169.254.169.254]/hooks", LINK_LOCAL),
        ("https://[::127.0.0.1]/hooks", LOOPBACK),  # IPv4-compatible
        ("https://[::10.0.0.1]/hooks", PRIVATE),
        ("https://sixtofour.example.test/hooks", LOOPBACK),
    ],
)
def test_refused_urls_are_a_400(url, reason, organizer, owner_client, monkeypatch):
    _resolving(
        monkeypatch,
        {
            "intranet.example.test": ["10.20.30.40"],
            "sixtofour.example.test": ["93.184.215.14", "2002:7f00:1::1"],
            "sitelocal.example.test": ["2606:2800:220:1::1", "fec0:0:0:1::5"],
        },
    )

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


def test_a_null_character_in_the_url_is_a_400(organizer, owner_client):
    response = owner_client.post(
        f"/api/public/organizers/{organizer.id}/webhooks",
        {"url": "https://93.184.215.14/ho\x00oks", "event_types": ["*"]},
        format="json",
    )

    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "invalid_parameters",
        "message": "Parameter 'url': Null characters are not allowed.",
        "fields": {"url": ["Null characters are not allowed."]},
    }
    assert not WebhookEndpoint.objects.exists()


def test_a_null_character_is_refused_by_the_url_check_too():
    """The admin and the API stop it first with their own message; the check does not rely on it."""
    with pytest.raises(network.WebhookUrlRefused) as refused:
        network.target_check("https://93.184.215.14/ho\x00oks", allow_private=True)
    assert refused.value.reason == WHITESPACE


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::5db8:d70e", "2002:5db8:d70e::1", "::ffff:93.184.215.14"],
)
def test_ipv6_addresses_carrying_a_public_ipv4_address_are_accepted(address, monkeypatch):
    """NAT64 of the well-known prefix (what a DNS64 resolver answers for an IPv4-only host),
    6to4 and IPv4-mapped addresses of a public address reach that public address."""
    _resolving(monkeypatch, {"v6.example.test": [address]})
    target = network.target_check("https://v6.example.test/in", allow_private=False)
    assert target.address == address


@pytest.mark.parametrize(
    "address, reason",
    [
        ("2001:0:5db8:d70e::a247:28f1", PRIVATE),  # Teredo: public server and client
        ("::93.184.215.14", "it points at a reserved address"),  # IPv4-compatible: deprecated
        ("64:ff9b:1::5db8:d70e", "it points at a reserved address"),  # local-use NAT64
    ],
)
def test_other_ipv6_forms_of_a_public_address_keep_their_own_class(address, reason, monkeypatch):
    _resolving(monkeypatch, {"v6.example.test": [address]})
    with pytest.raises(network.WebhookUrlRefused) as refused:
        network.target_check("https://v6.example.test/in", allow_private=False)
    assert refused.value.reason == reason


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


def test_an_address_that_turned_site_local_is_refused_at_delivery(organizer, monkeypatch):
    name = "rebinding.example.test"
    _resolving(monkeypatch, {name: ["93.184.215.14"]})
    endpoint = WebhookEndpoint.objects.create(
        organizer=organizer, url=f"https://{name}/hooks", event_types=["*"], secret_encrypted=""
    )
    webhook_endpoint_ping(endpoint=endpoint)
    _resolving(monkeypatch, {name: ["fec0::1"]})

    webhook_delivery_attempt(delivery_id=WebhookDelivery.objects.get().pk)

    attempt = WebhookAttempt.objects.get()
    assert (attempt.status_code, attempt.error) == (None, f"URL refused: {PRIVATE}")
    assert WebhookDelivery.objects.get().status == "pending"
    # The connection is held to the same rule, whatever made the target.
    target = network.Target("https", name, 443, "/hooks", "fec0::1")
    with pytest.raises(network.WebhookUrlRefused, match=PRIVATE):
        network.post(target, body=b"{}", headers={}, timeout=1)


@pytest.mark.parametrize(
    "address",
    [
        "2002:7f00:1::1",  # 6to4
        "64:ff9b::7f00:1",  # NAT64
        "64:ff9b:1::7f00:1",
        "2001:0:5db8:d70e::80ff:fffe",  # Teredo client
        "2001:0:7f00:1::a247:28f1",  # Teredo server
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::127.0.0.1",  # IPv4-compatible
    ],
)
def test_an_address_that_now_embeds_loopback_is_refused_at_delivery(
    address, organizer, receiver, monkeypatch
):
    name = "rebinding.example.test"
    _resolving(monkeypatch, {name: ["93.184.215.14"]})
    endpoint = WebhookEndpoint.objects.create(
        organizer=organizer, url=f"https://{name}/hooks", event_types=["*"], secret_encrypted=""
    )
    webhook_endpoint_ping(endpoint=endpoint)
    _resolving(monkeypatch, {name: [address]})

    webhook_delivery_attempt(delivery_id=WebhookDelivery.objects.get().pk)

    attempt = WebhookAttempt.objects.get()
    assert (attempt.status_code, attempt.error) == (None, f"URL refused: {LOOPBACK}")
    assert WebhookDelivery.objects.get().status == "pending"


def test_a_stored_url_with_a_line_break_is_refused_at_delivery(organizer, receiver, settings):
    """A URL stored before the check refused it: tab, CR and LF were dropped by urlsplit, so the
    attempt went to a URL other than the one shown."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, _ = endpoint_for(receiver, organizer)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(url=receiver.url + "\r\nX: 1")
    webhook_endpoint_ping(endpoint=endpoint)

    webhook_delivery_attempt(delivery_id=WebhookDelivery.objects.get().pk)

    attempt = WebhookAttempt.objects.get()
    assert (attempt.status_code, attempt.error) == (None, f"URL refused: {WHITESPACE}")
    assert receiver.requests == []


def test_a_path_beyond_ascii_is_sent_percent_encoded(organizer, receiver, settings):
    """As a browser sends it: the request line is ASCII (http.client refuses anything else)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, _ = endpoint_for(receiver, organizer)
    endpoint.url = receiver.url + "/ช้าง?q=ü&r=%20"
    endpoint.save()
    webhook_endpoint_ping(endpoint=endpoint)

    webhook_delivery_attempt(delivery_id=WebhookDelivery.objects.get().pk)

    [request] = receiver.requests
    assert request["path"] == "/hooks/%E0%B8%8A%E0%B9%89%E0%B8%B2%E0%B8%87?q=%C3%BC&r=%20"
    assert WebhookDelivery.objects.get().status == "delivered"


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

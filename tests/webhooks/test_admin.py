"""Webhooks in the admin: owners and admins of the organizer only; the delivery log and its
redeliver action."""

import pytest
from django.test import Client
from django_tasks_db.models import DBTaskResult

from tests.factories import MembershipFactory, UserFactory, WebhookEndpointFactory
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.secrets import secret_decrypt
from webhooks.services import webhook_endpoint_ping

pytestmark = pytest.mark.django_db

ENDPOINTS = "/admin/webhooks/webhookendpoint/"
DELIVERIES = "/admin/webhooks/webhookdelivery/"


def _signed_in(organizer, role: str) -> Client:
    user = UserFactory(username=f"{role}-user", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def delivered(organizer):
    endpoint = WebhookEndpointFactory(organizer=organizer, url="https://hooks.example.com/a")
    webhook_endpoint_ping(endpoint=endpoint)
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="delivered", attempt_count=1)
    DBTaskResult.objects.all().delete()
    return delivery


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_managers_see_endpoints_and_the_delivery_log(role, organizer, other_organizer, delivered):
    WebhookEndpointFactory(organizer=other_organizer, url="https://other.example.com/b")
    client = _signed_in(organizer, role)

    endpoints = client.get(ENDPOINTS).content.decode()
    log = client.get(DELIVERIES).content.decode()
    page = client.get(f"{DELIVERIES}{delivered.pk}/change/")

    assert "https://hooks.example.com/a" in endpoints
    assert "other.example.com" not in endpoints
    assert delivered.event_id in log
    assert page.status_code == 200
    assert "&quot;type&quot;: &quot;ping&quot;" in page.content.decode()  # the body sent


def test_staff_members_do_not_see_webhooks(organizer, delivered):
    client = _signed_in(organizer, "staff")
    assert client.get(ENDPOINTS).status_code == 403
    assert client.get(DELIVERIES).status_code == 403
    assert client.get(f"{DELIVERIES}{delivered.pk}/change/").status_code in (403, 404)


def test_another_organizers_delivery_is_a_404(other_organizer, delivered):
    client = _signed_in(other_organizer, "owner")
    assert client.get(f"{DELIVERIES}{delivered.pk}/change/").status_code == 404


def test_redeliver_queues_the_same_event_again(organizer, delivered):
    client = _signed_in(organizer, "owner")

    response = client.post(
        DELIVERIES,
        {"action": "redeliver", "_selected_action": [delivered.pk]},
        follow=True,
    )

    assert "1 delivery queued again." in response.content.decode()
    delivered.refresh_from_db()
    assert (delivered.status, delivered.event_id) == ("pending", delivered.event_id)
    task = DBTaskResult.objects.get()
    assert task.args_kwargs == {"args": [delivered.pk], "kwargs": {}}


def test_redeliver_to_a_disabled_endpoint_is_refused(organizer, delivered):
    WebhookEndpoint.objects.update(is_active=False)
    client = _signed_in(organizer, "owner")

    response = client.post(
        DELIVERIES, {"action": "redeliver", "_selected_action": [delivered.pk]}, follow=True
    )

    assert "The endpoint is disabled" in response.content.decode()
    assert not DBTaskResult.objects.exists()


def test_an_endpoint_added_in_the_admin_shows_its_secret_once(organizer, settings):
    client = _signed_in(organizer, "admin")

    response = client.post(
        f"{ENDPOINTS}add/",
        {
            "organizer": organizer.pk,
            "url": "https://93.184.215.14/hooks",
            "event_types": ["ticket.checked_in"],
        },
        follow=True,
    )

    endpoint = WebhookEndpoint.objects.get()
    secret = secret_decrypt(endpoint.secret_encrypted)
    assert secret in response.content.decode()
    assert (endpoint.url, endpoint.event_types) == (
        "https://93.184.215.14/hooks",
        ["ticket.checked_in"],
    )


def test_an_endpoint_added_in_the_admin_may_subscribe_to_ping(organizer):
    client = _signed_in(organizer, "owner")

    response = client.post(
        f"{ENDPOINTS}add/",
        {
            "organizer": organizer.pk,
            "url": "https://93.184.215.14/hooks",
            "event_types": ["ping", "ticket.revoked"],
        },
    )

    assert response.status_code == 302
    assert WebhookEndpoint.objects.get().event_types == ["ping", "ticket.revoked"]


def test_an_endpoint_with_a_refused_url_is_not_added(organizer, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    client = _signed_in(organizer, "owner")

    response = client.post(
        f"{ENDPOINTS}add/",
        {"organizer": organizer.pk, "url": "https://10.0.0.1/x", "event_types": ["*"]},
    )

    assert response.status_code == 200
    assert "it points at a private address" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_enabling_a_disabled_endpoint_starts_afresh(organizer):
    from django.utils import timezone

    endpoint = WebhookEndpointFactory(
        organizer=organizer,
        url="https://93.184.215.14/hooks",
        is_active=False,
        failing_since=timezone.now(),
        disabled_at=timezone.now(),
    )
    client = _signed_in(organizer, "owner")

    client.post(
        f"{ENDPOINTS}{endpoint.pk}/change/",
        {"url": endpoint.url, "event_types": ["*"], "is_active": "on"},
    )

    endpoint.refresh_from_db()
    assert (endpoint.is_active, endpoint.failing_since, endpoint.disabled_at) == (True, None, None)

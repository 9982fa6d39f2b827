"""`/organizers/{o}/webhooks` (CONTRACT §13): list, register, delete, test."""

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from checkin.services.gate import ticket_check_in
from tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    OrganizerFactory,
    TicketFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.support import TokenClient, mint_token
from tickets.services.common import Actor
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.secrets import secret_decrypt

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://93.184.215.14/hooks"  # a public address: no DNS needed


def _iso(value) -> str:
    return timezone.localtime(value).isoformat()


def _client(organizer, role: str, username: str = "person") -> TokenClient:
    user = UserFactory(username=username)
    MembershipFactory(user=user, organizer=organizer, role=role)
    application = ApplicationFactory(organizer=organizer)
    return TokenClient(mint_token(application=application, user=user, scope="public organizer"))


@pytest.fixture
def owner_client(organizer):
    return _client(organizer, "owner", "owner")


def _path(organizer, suffix: str = "") -> str:
    return f"/api/public/organizers/{organizer.id}/webhooks{suffix}"


def _endpoint_json(endpoint: WebhookEndpoint) -> dict:
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "is_active": endpoint.is_active,
        "created_at": _iso(endpoint.created_at),
        "updated_at": _iso(endpoint.updated_at),
    }


def test_webhooks_list_shows_the_organizers_endpoints(organizer, owner_client):
    first = WebhookEndpointFactory(organizer=organizer, event_types=["ticket.checked_in"])
    second = WebhookEndpointFactory(organizer=organizer, is_active=False)
    WebhookEndpointFactory()  # another organizer's

    response = owner_client.get(_path(organizer))

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "webhooks": [_endpoint_json(first), _endpoint_json(second)],
        "count": 2,
        "total": 2,
        "page": 1,
        "per_page": 10,
    }


@pytest.mark.parametrize("n", [1, 30])
def test_webhooks_list_query_count_is_constant(
    n, organizer, owner_client, django_assert_num_queries
):
    WebhookEndpointFactory.create_batch(n, organizer=organizer)
    with django_assert_num_queries(4):  # token, organizer with role, page, count (a full page)
        response = owner_client.get(_path(organizer) + f"?per_page={n}")
    assert response.json()["total"] == n


def test_webhook_create_returns_the_secret_once_and_stores_it_encrypted(organizer, owner_client):
    response = owner_client.post(
        _path(organizer),
        {"url": PUBLIC_URL, "event_types": ["ticket.checked_in", "ticket.revoked"]},
        format="json",
    )

    assert response.status_code == 201, response.content
    endpoint = WebhookEndpoint.objects.get()
    body = response.json()
    secret = body["webhook"].pop("secret")
    assert body == {"success": True, "webhook": _endpoint_json(endpoint)}
    assert endpoint.organizer_id == organizer.id
    assert endpoint.event_types == ["ticket.checked_in", "ticket.revoked"]
    assert secret.startswith("whsec_") and len(secret) == len("whsec_") + 44
    assert secret_decrypt(endpoint.secret_encrypted) == secret
    # A database dump alone does not reveal it: only the encrypted form is stored.
    dump = _dump_webhooks()
    assert secret not in dump and secret.removeprefix("whsec_") not in dump
    assert "secret" not in owner_client.get(_path(organizer)).json()["webhooks"][0]


def _dump_webhooks() -> str:
    from io import StringIO

    out = StringIO()
    call_command("dumpdata", "webhooks", stdout=out)
    return out.getvalue()


def test_webhook_create_accepts_a_form_body_with_every_type(organizer, owner_client):
    response = owner_client.post(_path(organizer), {"url": PUBLIC_URL, "event_types": "*"})
    assert response.status_code == 201, response.content
    assert response.json()["webhook"]["event_types"] == ["*"]


@pytest.mark.parametrize("event_types", [["ping"], ["ticket.created", "ping"]])
def test_webhook_create_accepts_ping_as_an_event_type(event_types, organizer, owner_client):
    response = owner_client.post(
        _path(organizer), {"url": PUBLIC_URL, "event_types": event_types}, format="json"
    )

    assert response.status_code == 201, response.content
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.event_types == event_types
    assert response.json()["webhook"]["event_types"] == event_types


def test_a_ping_subscription_hears_only_the_pings_of_its_test(organizer, event, owner_client):
    """Nothing but `/test` sends a ping: a ticket's change records no event for an endpoint
    that subscribed to `ping` alone, and its test still reaches it."""
    created = owner_client.post(
        _path(organizer), {"url": PUBLIC_URL, "event_types": ["ping"]}, format="json"
    )
    webhook_id = created.json()["webhook"]["id"]
    ticket_check_in(event=event, ticket_id=TicketFactory(event=event).id, actor=Actor())
    assert not WebhookEvent.objects.exists()

    response = owner_client.post(_path(organizer, f"/{webhook_id}/test"))

    assert (response.status_code, response.json()) == (200, {"success": True})
    delivery = WebhookDelivery.objects.select_related("event").get()
    assert (delivery.endpoint_id, delivery.event.type) == (webhook_id, "ping")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"event_types": ["*"]}, "url"),
        ({"url": PUBLIC_URL}, "event_types"),
        ({"url": PUBLIC_URL, "event_types": []}, "event_types"),
        ({"url": PUBLIC_URL, "event_types": ["ticket.sold"]}, "event_types.0"),
        ({"url": PUBLIC_URL, "event_types": ["*", "ticket.created"]}, "event_types"),
        ({"url": "not a url", "event_types": ["*"]}, "url"),
        ({"url": "ftp://93.184.215.14/x", "event_types": ["*"]}, "url"),
        ({"url": "https://user:pw@93.184.215.14/x", "event_types": ["*"]}, "url"),
        ({"url": "https://93.184.215.14:99999/x", "event_types": ["*"]}, "url"),
        ({"url": "https://x" * 700, "event_types": ["*"]}, "url"),
    ],
)
def test_webhook_create_refuses_bad_input(body, field, organizer, owner_client):
    response = owner_client.post(_path(organizer), body, format="json")

    assert response.status_code == 400, response.content
    error = response.json()
    assert (error["success"], error["error"], list(error["fields"])) == (
        False,
        "invalid_parameters",
        [field],
    )
    assert not WebhookEndpoint.objects.exists()


def test_webhook_delete_removes_it_with_its_deliveries(organizer, owner_client):
    endpoint = WebhookEndpointFactory(organizer=organizer)
    owner_client.post(_path(organizer, f"/{endpoint.id}/test"))
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 1

    response = owner_client.delete(_path(organizer, f"/{endpoint.id}"))

    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert not WebhookEndpoint.objects.exists()
    assert not WebhookDelivery.objects.exists()


def test_webhook_test_queues_a_ping_for_this_endpoint_only(organizer, owner_client):
    endpoint = WebhookEndpointFactory(organizer=organizer, event_types=["ticket.created"])
    WebhookEndpointFactory(organizer=organizer)

    response = owner_client.post(_path(organizer, f"/{endpoint.id}/test"))

    assert response.status_code == 200
    assert response.json() == {"success": True}
    delivery = WebhookDelivery.objects.select_related("event").get()
    assert (delivery.endpoint_id, delivery.status) == (endpoint.id, "pending")
    assert delivery.event.payload == {
        "id": delivery.event_id,
        "type": "ping",
        "created_at": _iso(delivery.event.created_at),
        "organizer_id": organizer.id,
        "event_id": None,
        "data": {"webhook": {"id": endpoint.id, "url": endpoint.url}},
    }
    task = DBTaskResult.objects.get()
    assert (task.task_path, task.args_kwargs) == (
        "webhooks.tasks.webhook_deliver",
        {"args": [delivery.id], "kwargs": {}},
    )


@pytest.mark.parametrize("method, suffix", [("delete", ""), ("post", "/test")])
def test_another_organizers_webhook_is_not_found(method, suffix, organizer, owner_client):
    theirs = WebhookEndpointFactory(organizer=OrganizerFactory())

    for webhook_id in (theirs.id, 2147483647, 0):
        response = getattr(owner_client, method)(_path(organizer, f"/{webhook_id}{suffix}"))
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"
    assert WebhookEndpoint.objects.filter(pk=theirs.pk).exists()
    assert not WebhookDelivery.objects.exists()


@pytest.mark.parametrize(
    "method, suffix",
    [("get", ""), ("post", ""), ("delete", "/{id}"), ("post", "/{id}/test")],
)
def test_staff_members_may_not_manage_webhooks(method, suffix, organizer):
    endpoint = WebhookEndpointFactory(organizer=organizer)
    client = _client(organizer, "staff", "gatekeeper")

    response = getattr(client, method)(
        _path(organizer, suffix.format(id=endpoint.id)),
        {"url": PUBLIC_URL, "event_types": ["*"]},
        format="json",
    )

    assert response.status_code == 403
    assert response.json() == {
        "success": False,
        "error": "not_organizer_member",
        "message": "Only the organizer's owners and admins may do this.",
    }
    assert WebhookEndpoint.objects.count() == 1 and not WebhookDelivery.objects.exists()


def test_application_tokens_may_not_manage_webhooks(organizer, app_client):
    response = app_client.get(_path(organizer))
    assert response.status_code == 403
    assert response.json()["error"] == "user_token_required"


def test_webhook_route_answers_405_for_other_methods(organizer, owner_client):
    endpoint = WebhookEndpointFactory(organizer=organizer)
    response = owner_client.get(_path(organizer, f"/{endpoint.id}"))
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"

"""Webhook endpoints and events (CONTRACT §13); `delivering` sends them.

An event is recorded by the service that makes the change, inside its transaction
(`webhook_event_record`): the event row and one task to dispatch it, so a rollback sends nothing
and a commit is never lost, and a change costs two inserts whatever the number of endpoints.
Workers (`manage.py run_worker`) then fan the event out to the endpoints subscribed to it.
"""

from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework import serializers

from . import tasks
from .exceptions import WebhookEndpointDisabled
from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from .network import target_check
from .secrets import secret_encrypt, secret_generate
from .selectors import webhook_subscriptions_changed, webhook_types_subscribed

EVENT_TYPES = [t for t in WebhookEvent.Type.values if t != WebhookEvent.Type.PING]


def webhook_url_check(*, url: str) -> None:
    """Raises: WebhookUrlRefused, if webhooks may not be sent to `url` (registration check)."""
    target_check(url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_URLS)


def webhook_endpoint_create(
    *, organizer_id: int, url: str, event_types: list[str]
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it with its signing secret, which is shown only now.

    Raises: WebhookUrlRefused.
    """
    assert event_types == ["*"] or set(event_types) <= set(EVENT_TYPES), event_types
    webhook_url_check(url=url)
    secret = secret_generate()
    webhook_subscriptions_changed(organizer_id=organizer_id)
    endpoint = WebhookEndpoint.objects.create(
        organizer_id=organizer_id,
        url=url,
        event_types=list(dict.fromkeys(event_types)),
        secret_encrypted=secret_encrypt(secret),
    )
    return endpoint, secret


def webhook_endpoint_delete(*, endpoint_id: int) -> None:
    """Remove an endpoint with its delivery log; its pending deliveries are dropped."""
    WebhookEndpoint.objects.filter(pk=endpoint_id).delete()


def _iso(value: datetime) -> str:
    return serializers.DateTimeField().to_representation(value)


def _event_create(*, organizer_id: int, event_id: int | None, type: str, data) -> WebhookEvent:
    event = WebhookEvent(organizer_id=organizer_id, type=type)
    event.payload = {
        "id": event.id,
        "type": type,
        "created_at": _iso(event.created_at),
        "organizer_id": organizer_id,
        "event_id": event_id,
        "data": data,
    }
    event.save(force_insert=True)
    return event


def webhook_wants(*, organizer_id: int, type: str) -> bool:
    """Whether some active endpoint of the organizer may want `type` (from the cache, usually:
    a check-in asks it before deciding whether it needs a transaction)."""
    types = webhook_types_subscribed(organizer_id=organizer_id)
    return "*" in types or type in types


def webhook_event_record(
    *,
    organizer_id: int,
    event_id: int | None,
    type: str,
    data: dict | Callable[[], dict],
) -> WebhookEvent | None:
    """Record an event for the organizer's endpoints subscribed to `type`.

    Call it inside the transaction of the change: its two rows (the event and the task that
    dispatches it) commit or roll back with the change. The task fans the event out to the
    endpoints subscribed when it runs, a moment later: the change's transaction reads no
    endpoint and writes nothing per endpoint. `data` is `{"ticket": ...}` or `{"order": ...}` as
    the API renders them; pass a function to build it only when some endpoint wants the event.
    Returns the event, or None when no endpoint wants it: then it costs no query when the
    organizer's subscriptions are in the cache, else one.
    """
    assert type in EVENT_TYPES, type
    if not webhook_wants(organizer_id=organizer_id, type=type):
        return None
    with transaction.atomic(savepoint=False):
        event = _event_create(
            organizer_id=organizer_id,
            event_id=event_id,
            type=type,
            data=data() if callable(data) else data,
        )
        tasks.webhook_event_dispatch.enqueue(event.pk)
    return event


@transaction.atomic
def webhook_endpoint_ping(*, endpoint: WebhookEndpoint) -> WebhookEvent:
    """Send a `ping` to this endpoint only (also when disabled: it is how one checks a fix)."""
    event = _event_create(
        organizer_id=endpoint.organizer_id,
        event_id=None,
        type=WebhookEvent.Type.PING,
        data={"webhook": {"id": endpoint.pk, "url": endpoint.url}},
    )
    delivery = WebhookDelivery.objects.create(
        event=event,
        endpoint=endpoint,
        pending_since=event.created_at,
        next_attempt_at=event.created_at,
    )
    tasks.webhook_deliver.enqueue(delivery.pk)
    return event


@transaction.atomic
def webhook_delivery_redeliver(*, delivery_id: int) -> None:
    """Send a delivered or failed event again, with the same `webhook-id`, and retries anew.

    Locks: the delivery row. Raises: WebhookEndpointDisabled.
    """
    delivery = (
        WebhookDelivery.objects.select_for_update(of=("self",))
        .select_related("endpoint")
        .get(pk=delivery_id)
    )
    if not delivery.endpoint.is_active:
        raise WebhookEndpointDisabled()
    if delivery.status == WebhookDelivery.Status.PENDING:
        return  # already on its way
    now = timezone.now()
    delivery.status = WebhookDelivery.Status.PENDING
    delivery.pending_since = delivery.next_attempt_at = now
    delivery.save(update_fields=["status", "pending_since", "next_attempt_at", "updated_at"])
    tasks.webhook_deliver.enqueue(delivery.pk)


@transaction.atomic
def webhook_endpoint_update(
    *, endpoint_id: int, url: str, event_types: list[str], is_active: bool
) -> WebhookEndpoint:
    """Change an endpoint (the admin); enabling it again starts its failure count afresh.

    Locks: the endpoint row. Raises: WebhookUrlRefused.
    """
    assert event_types == ["*"] or set(event_types) <= set(EVENT_TYPES), event_types
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
    if url != endpoint.url:
        webhook_url_check(url=url)
    if is_active and not endpoint.is_active:
        endpoint.failing_since = endpoint.disabled_at = None
    webhook_subscriptions_changed(organizer_id=endpoint.organizer_id)
    endpoint.url, endpoint.event_types, endpoint.is_active = url, event_types, is_active
    endpoint.save()
    return endpoint

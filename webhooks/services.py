"""Webhook endpoints, events and deliveries (CONTRACT §13).

An event is recorded by the service that makes the change, inside its transaction
(`webhook_event_record`): one delivery per subscribed endpoint and one task per delivery, all
rows of that transaction, so a rollback sends nothing and a commit is never lost. Workers
(`manage.py run_worker`) then attempt each delivery; a failed attempt schedules the next one
(a new task, in the transaction that logs the attempt) until the delivery is a day old.
"""

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from rest_framework import serializers
from standardwebhooks.webhooks import Webhook

from organizers.models import Membership

from . import tasks
from .exceptions import WebhookEndpointDisabled, WebhookUrlRefused
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from .network import DeliveryError, post, target_check
from .secrets import secret_decrypt, secret_encrypt, secret_generate
from .selectors import webhook_subscriptions_changed, webhook_types_subscribed

logger = logging.getLogger(__name__)

EVENT_TYPES = [t for t in WebhookEvent.Type.values if t != WebhookEvent.Type.PING]
USER_AGENT = "ticketing-webhooks/1"


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


def _deliveries_create(
    *, endpoints: list[WebhookEndpoint], organizer_id: int, event_id: int | None, type: str, data
) -> WebhookEvent:
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
    deliveries = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(event=event, endpoint=endpoint, next_attempt_at=event.created_at)
            for endpoint in endpoints
        ]
    )
    for delivery in deliveries:
        tasks.webhook_deliver.enqueue(delivery.pk)
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
    """Record an event for every active endpoint of the organizer subscribed to `type`.

    Call it inside the transaction of the change: its rows (event, deliveries, their tasks)
    commit or roll back with the change. `data` is `{"ticket": ...}` or `{"order": ...}` as the
    API renders them; pass a function to build it only when some endpoint wants the event.
    Returns the event, or None when no endpoint wants it: then it costs no query when the
    organizer's subscriptions are in the cache, else one.
    """
    assert type in EVENT_TYPES, type
    if not webhook_wants(organizer_id=organizer_id, type=type):
        return None
    endpoints = [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(
            organizer_id=organizer_id, is_active=True
        ).only("id", "event_types")
        if endpoint.subscribes_to(type)
    ]
    if not endpoints:
        return None
    with transaction.atomic(savepoint=False):
        return _deliveries_create(
            endpoints=endpoints,
            organizer_id=organizer_id,
            event_id=event_id,
            type=type,
            data=data() if callable(data) else data,
        )


@transaction.atomic
def webhook_endpoint_ping(*, endpoint: WebhookEndpoint) -> WebhookEvent:
    """Send a `ping` to this endpoint only (also when disabled: it is how one checks a fix)."""
    return _deliveries_create(
        endpoints=[endpoint],
        organizer_id=endpoint.organizer_id,
        event_id=None,
        type=WebhookEvent.Type.PING,
        data={"webhook": {"id": endpoint.pk, "url": endpoint.url}},
    )


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


def retry_delay(attempt_count: int) -> timedelta:
    """How long after the start of failed attempt n the next one is due: base, 2 × base,
    4 × base... up to the cap."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS
    exponent = min(attempt_count - 1, 32)
    return timedelta(seconds=min(base * 2**exponent, settings.WEBHOOK_RETRY_MAX_DELAY_SECONDS))


def _signed_headers(event: WebhookEvent, secret: str, body: str) -> dict[str, str]:
    now = datetime.now(tz=UTC)
    signature = Webhook(secret).sign(msg_id=event.pk, timestamp=now, data=body)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": event.pk,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }


def webhook_delivery_attempt(*, delivery_id: int) -> None:
    """POST a pending delivery once and log the attempt (the delivery task's body).

    A delivery that is gone (endpoint deleted) or no longer pending (a task run twice) is
    skipped. A non-2xx answer, a timeout, a refused connection or a refused address is a failed
    attempt: the next is scheduled, or the delivery fails once it is a day old.
    """
    delivery = (
        WebhookDelivery.objects.select_related("event", "endpoint").filter(pk=delivery_id).first()
    )
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return
    endpoint, event = delivery.endpoint, delivery.event
    attempted_at, started = timezone.now(), time.monotonic()
    status_code, error = None, ""
    if not endpoint.is_active and event.type != WebhookEvent.Type.PING:
        error = "endpoint disabled: not sent"
    else:
        body = json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False)
        try:
            target = target_check(endpoint.url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_URLS)
            status_code = post(
                target,
                body=body.encode(),
                headers=_signed_headers(event, secret_decrypt(endpoint.secret_encrypted), body),
                timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            )
        except WebhookUrlRefused as exc:
            error = f"URL refused: {exc.reason}"
        except DeliveryError as exc:
            error = str(exc)
    _attempt_record(
        delivery_id=delivery.pk,
        attempted_at=attempted_at,
        status_code=status_code,
        duration_ms=round((time.monotonic() - started) * 1000),
        error=error,
        give_up=bool(error) and not endpoint.is_active and event.type != WebhookEvent.Type.PING,
    )


@transaction.atomic
def _attempt_record(
    *,
    delivery_id: int,
    attempted_at: datetime,
    status_code: int | None,
    duration_ms: int,
    error: str,
    give_up: bool,
) -> None:
    """Log an attempt and decide what follows: delivered, the next retry, or failed.

    Locks: the delivery row, so a task run twice logs both attempts but decides once.
    """
    delivery = (
        WebhookDelivery.objects.select_for_update(of=("self",))
        .select_related("endpoint")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None:
        return  # the endpoint was deleted meanwhile
    now = timezone.now()
    succeeded = status_code is not None and 200 <= status_code < 300
    next_retry_at = None
    if delivery.status == WebhookDelivery.Status.PENDING:
        delivery.attempt_count += 1
        if succeeded:
            delivery.status = WebhookDelivery.Status.DELIVERED
            delivery.delivered_at = now
        elif give_up or now - delivery.pending_since >= timedelta(
            seconds=settings.WEBHOOK_RETRY_FOR_SECONDS
        ):
            delivery.status = WebhookDelivery.Status.FAILED
        else:
            next_retry_at = attempted_at + retry_delay(delivery.attempt_count)
            tasks.webhook_deliver.using(run_after=next_retry_at).enqueue(delivery.pk)
        delivery.next_attempt_at = next_retry_at
        delivery.save(
            update_fields=[
                "attempt_count",
                "status",
                "delivered_at",
                "next_attempt_at",
                "updated_at",
            ]
        )
    WebhookAttempt.objects.create(
        delivery=delivery,
        attempted_at=attempted_at,
        status_code=status_code,
        duration_ms=duration_ms,
        error=error[:500],
        next_retry_at=next_retry_at,
    )
    if not give_up:
        _endpoint_health_record(endpoint=delivery.endpoint, succeeded=succeeded, at=attempted_at)


def _endpoint_health_record(*, endpoint: WebhookEndpoint, succeeded: bool, at: datetime) -> None:
    """A success ends the endpoint's failing run; a failure 3 days into one disables it."""
    endpoints = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    if succeeded:
        if endpoint.failing_since is not None:  # as read with the locked delivery: most are not
            endpoints.filter(failing_since__isnull=False).update(failing_since=None)
        return
    endpoints.filter(failing_since__isnull=True).update(failing_since=at)
    cutoff = timezone.now() - timedelta(seconds=settings.WEBHOOK_DISABLE_AFTER_SECONDS)
    now = timezone.now()
    disabled = endpoints.filter(is_active=True, failing_since__lte=cutoff).update(
        is_active=False, disabled_at=now, updated_at=now
    )
    if disabled:
        logger.warning("webhook endpoint %s disabled after failing since %s", endpoint.pk, cutoff)
        tasks.webhook_endpoint_disabled_email.enqueue(endpoint.pk)


def webhook_endpoint_disabled_notify(*, endpoint_id: int) -> None:
    """Email the organizer's owners that an endpoint was disabled (a task's body)."""
    endpoint = WebhookEndpoint.objects.select_related("organizer").filter(pk=endpoint_id).first()
    if endpoint is None or endpoint.is_active:
        return
    owners = list(
        Membership.objects.filter(organizer_id=endpoint.organizer_id, role=Membership.Role.OWNER)
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )
    if not owners:
        logger.warning("webhook endpoint %s disabled; no owner has an email", endpoint_id)
        return
    context = {
        "endpoint": endpoint,
        "organizer": endpoint.organizer,
        "days": settings.WEBHOOK_DISABLE_AFTER_SECONDS / 86400,
    }
    send_mail(
        subject=f"Webhook disabled: {endpoint.url}"[:200],
        message=render_to_string("webhooks/email/endpoint_disabled.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=owners,
    )


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

"""Sending webhook events (CONTRACT §13): the bodies of the delivery tasks.

A recorded event is dispatched by one task (`webhook_event_dispatch`), which a worker runs
together with other due ones (`batching`): it creates a delivery per endpoint subscribed to
each event, posts to all of them at once and logs every attempt in one transaction. A failed
delivery is retried by a task of its own (`webhook_delivery_attempt`), scheduled in the
transaction that logs the failure, until the delivery is a day old; the admin's redeliver goes
the same way. Both run the same two steps: `_send` (no database) and
`_attempts_record` (the decisions).
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from organizers.models import Membership

from . import tasks
from .exceptions import WebhookUrlRefused
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from .network import DeliveryError, post, target_check
from .secrets import secret_decrypt

logger = logging.getLogger(__name__)

USER_AGENT = "ticketing-webhooks/1"
# A retry task runs at its delivery's `next_attempt_at`; one found well before it is a stale
# copy whose chain was already continued.
NOT_DUE_LEEWAY_SECONDS = 5
# The POSTs of a batch are sent at once, so a slow endpoint delays no other.
SENDERS = 8
_senders = ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="webhook-send")
# The events a dispatch (or publish) task takes on with its own (`batching`), and the POSTs
# they may make: even if every one times out, the batch ends within
# BATCH_POSTS / SENDERS × WEBHOOK_TIMEOUT_SECONDS (80 s at the default 10 s), well within the
# lease after which a task still running is deemed lost (TASK_LEASE_SECONDS).
BATCH_EVENTS = 20
BATCH_POSTS = 64


@dataclass(frozen=True)
class Attempt:
    delivery_id: int
    endpoint: WebhookEndpoint
    attempted_at: datetime
    status_code: int | None
    duration_ms: int
    error: str
    give_up: bool  # the endpoint is disabled: no retry, and no mark on its health

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def retry_delay(attempt_count: int) -> timedelta:
    """How long after the start of failed attempt n the next one is due: base, 2 × base,
    4 × base... up to the cap."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS
    exponent = min(attempt_count - 1, 32)
    return timedelta(seconds=min(base * 2**exponent, settings.WEBHOOK_RETRY_MAX_DELAY_SECONDS))


def webhook_events_dispatch(*, event_ids: list[str]) -> set[str]:
    """Fan recorded events out to the endpoints subscribed to them, and attempt each delivery;
    the ids of those left for another run (`webhook_events_fan_out`).

    Run twice (a worker lost mid-task), it adds no delivery (one per event and endpoint) and
    sends again only those never attempted (receivers deduplicate by `webhook-id`): a failed
    one already has its retry scheduled.
    """
    found = WebhookEvent.objects.in_bulk(event_ids)
    return webhook_events_fan_out([found[pk] for pk in dict.fromkeys(event_ids) if pk in found])


def webhook_events_fan_out(events: list[WebhookEvent]) -> set[str]:
    """`webhook_events_dispatch` for events already read, in one pass: one INSERT of their
    deliveries, their POSTs all at once, one transaction logging them.

    The first event is always sent; the others while their deliveries fit in `BATCH_POSTS`.
    Returns the ids of the events left out: their deliveries exist, never attempted, and are
    sent when they are dispatched again.
    """
    endpoints: dict[int, list[WebhookEndpoint]] = {}
    for organizer_id in dict.fromkeys(event.organizer_id for event in events):
        endpoints[organizer_id] = list(
            WebhookEndpoint.objects.filter(organizer_id=organizer_id, is_active=True)
        )
    WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                event=event,
                endpoint=endpoint,
                pending_since=event.created_at,
                next_attempt_at=event.created_at,
            )
            for event in events
            for endpoint in endpoints[event.organizer_id]
            if endpoint.subscribes_to(event.type)
        ],
        ignore_conflicts=True,
    )
    pending: dict[str, list[WebhookDelivery]] = {event.pk: [] for event in events}
    for delivery in WebhookDelivery.objects.filter(
        event__in=events, status=WebhookDelivery.Status.PENDING, attempt_count=0
    ).select_related("endpoint"):
        pending[delivery.event_id].append(delivery)
    sending, left, posts = [], set(), 0
    for event in events:
        deliveries = pending[event.pk]
        if sending and posts + len(deliveries) > BATCH_POSTS:
            left.add(event.pk)
        else:
            sending.append((event, deliveries))
            posts += len(deliveries)
    _attempt(sending)
    return left


def webhook_delivery_attempt(*, delivery_id: int) -> None:
    """Attempt one pending delivery (a retry or a redelivery).

    A delivery that is gone (endpoint deleted), no longer pending, or whose next attempt is
    not due (a task run twice, after its first run scheduled the next) is skipped. A non-2xx
    answer, a timeout, a refused connection or a refused address is a failed attempt: the next
    is scheduled, or the delivery fails once it is a day old.
    """
    delivery = (
        WebhookDelivery.objects.select_related("event", "endpoint").filter(pk=delivery_id).first()
    )
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return
    due = delivery.next_attempt_at
    if due is not None and due > timezone.now() + timedelta(seconds=NOT_DUE_LEEWAY_SECONDS):
        return
    _attempt([(delivery.event, [delivery])])


def _attempt(sending: list[tuple[WebhookEvent, list[WebhookDelivery]]]) -> None:
    posts = [
        (event, json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False), delivery)
        for event, deliveries in sending
        for delivery in deliveries
    ]
    if not posts:
        return
    if len(posts) == 1:
        attempts = [_send(*posts[0])]
    else:
        attempts = list(_senders.map(lambda post: _send(*post), posts))
    _attempts_record(attempts)


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


def _send(event: WebhookEvent, body: str, delivery: WebhookDelivery) -> Attempt:
    """POST the event to the delivery's endpoint once; no database access (runs in threads)."""
    endpoint = delivery.endpoint
    attempted_at, started = timezone.now(), time.monotonic()
    status_code, error = None, ""
    disabled = not endpoint.is_active and event.type != WebhookEvent.Type.PING
    if disabled:
        error = "endpoint disabled: not sent"
    else:
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
    return Attempt(
        delivery_id=delivery.pk,
        endpoint=endpoint,
        attempted_at=attempted_at,
        status_code=status_code,
        duration_ms=round((time.monotonic() - started) * 1000),
        error=error,
        give_up=disabled,
    )


@transaction.atomic
def _attempts_record(attempts: list[Attempt]) -> None:
    """Log attempts and decide what follows each: delivered, the next retry, or failed.

    Locks: the deliveries' rows, so a task run twice logs both attempts but decides once.
    """
    locked = WebhookDelivery.objects.select_for_update().filter(
        pk__in=[a.delivery_id for a in attempts]
    )
    deliveries = {d.pk: d for d in locked.order_by("pk")}
    now = timezone.now()
    decided, logged = [], []
    for attempt in attempts:
        delivery = deliveries.get(attempt.delivery_id)
        if delivery is None:
            continue  # the endpoint was deleted meanwhile
        next_retry_at = None
        if delivery.status == WebhookDelivery.Status.PENDING:
            delivery.attempt_count += 1
            if attempt.succeeded:
                delivery.status = WebhookDelivery.Status.DELIVERED
                delivery.delivered_at = now
            elif attempt.give_up or now - delivery.pending_since >= timedelta(
                seconds=settings.WEBHOOK_RETRY_FOR_SECONDS
            ):
                delivery.status = WebhookDelivery.Status.FAILED
            else:
                next_retry_at = attempt.attempted_at + retry_delay(delivery.attempt_count)
                tasks.webhook_deliver.using(run_after=next_retry_at).enqueue(delivery.pk)
            delivery.next_attempt_at = next_retry_at
            delivery.updated_at = now
            decided.append(delivery)
        logged.append(
            WebhookAttempt(
                delivery=delivery,
                attempted_at=attempt.attempted_at,
                status_code=attempt.status_code,
                duration_ms=attempt.duration_ms,
                error=attempt.error[:500],
                next_retry_at=next_retry_at,
            )
        )
        if not attempt.give_up:
            _endpoint_health_record(
                endpoint=attempt.endpoint, succeeded=attempt.succeeded, at=attempt.attempted_at
            )
    _deliveries_save(decided)
    WebhookAttempt.objects.bulk_create(logged)


def _deliveries_save(deliveries: list[WebhookDelivery]) -> None:
    """One UPDATE per outcome: an event's deliveries mostly share theirs (all delivered at
    once), and `bulk_update`'s CASE per row and column cost the worker more than sending."""
    fields = ("attempt_count", "status", "delivered_at", "next_attempt_at", "updated_at")
    by_outcome: dict[tuple, list[int]] = {}
    for delivery in deliveries:
        outcome = tuple(getattr(delivery, field) for field in fields)
        by_outcome.setdefault(outcome, []).append(delivery.pk)
    for outcome, ids in by_outcome.items():
        WebhookDelivery.objects.filter(pk__in=ids).update(**dict(zip(fields, outcome, strict=True)))


def _endpoint_health_record(*, endpoint: WebhookEndpoint, succeeded: bool, at: datetime) -> None:
    """A success ends the endpoint's failing run; a failure 3 days into one disables it."""
    endpoints = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    if succeeded:
        if endpoint.failing_since is not None:  # as read before the attempt: most are not
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

"""Sending webhook events (CONTRACT §13): the bodies of the delivery tasks.

A recorded event is dispatched by one task (`webhook_event_dispatch`), which a worker runs
together with other due ones (`batching`): it creates a delivery per endpoint subscribed to
each event, posts to all of them at once and logs every attempt in one transaction. A failed
delivery is retried by a task of its own (`webhook_delivery_attempt`), scheduled in the
transaction that logs the failure, until the delivery is a day old; the admin's redeliver goes
the same way. Both run the same two steps: `_send` (no database) and
`_attempts_record` (the decisions).

One organizer's slow endpoints must not hold up everyone's deliveries (issue 28). An endpoint
whose attempts keep getting no answer costs a whole timeout each, so it has a circuit breaker:
after WEBHOOK_BREAKER_FAILURES of them in a row it is backed off for a cool-down, during which
its due attempts are logged as not sent and rescheduled to the cool-down's end, at no cost to
the network or the worker; the first attempt after it is a probe, and an answer closes the
breaker. A batch's POSTs share the senders fairly between organizers (`_send_batch`).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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
# The POSTs of a batch are sent at once, so a slow endpoint delays no other; while another
# organizer's wait, one organizer's take at most half of the senders (`_send_batch`).
SENDERS = 8
_senders = ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="webhook-send")
# The events a dispatch (or publish) task takes on with its own (`batching`), and the POSTs
# they may make: even if every one times out, the batch ends within
# BATCH_POSTS / SENDERS × WEBHOOK_TIMEOUT_SECONDS (80 s at the default 10 s), well within the
# lease after which a task still running is deemed lost (TASK_LEASE_SECONDS).
BATCH_EVENTS = 20
BATCH_POSTS = 64
BACKED_OFF = "endpoint backed off: not sent"


@dataclass(frozen=True)
class Attempt:
    delivery_id: int
    endpoint: WebhookEndpoint
    attempted_at: datetime
    status_code: int | None
    duration_ms: int
    error: str
    give_up: bool  # the endpoint is disabled: no retry, and no mark on its health
    # No answer, or a failing one after half the timeout or more: what the breaker counts.
    stalled: bool = False
    backed_off: bool = False  # not sent: the endpoint's breaker is open

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
    attempts = [_send(*posts[0])] if len(posts) == 1 else _send_batch(posts)
    _attempts_record(attempts)


@dataclass
class _EndpointInBatch:
    """What a batch knows of an endpoint's breaker while it sends."""

    unanswered: int  # attempts in a row without an answer: as read, then as this batch saw
    stalled: bool = False  # one of this batch's attempts got no answer
    in_flight: int = 0

    def tripped(self) -> bool:
        return self.stalled and self.unanswered >= settings.WEBHOOK_BREAKER_FAILURES

    def waiting(self) -> bool:
        """After an attempt without an answer, one POST at a time: the next goes out only
        once those in flight have answered (or not: then the breaker may trip first)."""
        return self.unanswered > 0 and self.in_flight > 0


def _send_batch(posts: list[tuple[WebhookEvent, str, WebhookDelivery]]) -> list[Attempt]:
    """Send a batch's POSTs through the senders; their attempts, in the posts' order.

    Fair between organizers: the next POST is the organizer's with the fewest in flight (then
    the fewest left), and while another organizer's wait, one organizer has at most half of
    the senders, so a hung receiver holds up only its own organizer's posts. An endpoint that
    stopped answering gets one POST at a time, and none once the breaker trips.
    """
    attempts: list[Attempt | None] = [None] * len(posts)
    queued: dict[int, list[int]] = {}  # organizer id -> its posts not started, in order
    for n, (event, _, _) in enumerate(posts):
        queued.setdefault(event.organizer_id, []).append(n)
    endpoints = {
        delivery.endpoint_id: _EndpointInBatch(unanswered=delivery.endpoint.unanswered_count)
        for _, _, delivery in posts
    }
    in_flight: Counter[int] = Counter()
    running: dict[Future, int] = {}

    def start_one() -> bool:
        share = SENDERS if len(queued) == 1 else max(1, SENDERS // 2)
        for organizer in sorted(queued, key=lambda o: (in_flight[o], len(queued[o]))):
            if in_flight[organizer] >= share:
                continue
            for n in queued[organizer]:
                event, body, delivery = posts[n]
                endpoint = endpoints[delivery.endpoint_id]
                if endpoint.waiting():
                    continue
                queued[organizer].remove(n)
                if not queued[organizer]:
                    del queued[organizer]
                now = timezone.now()
                if endpoint.tripped() or _backed_off(event, delivery, at=now):
                    attempts[n] = _not_sent(delivery, at=now)
                else:
                    running[_senders.submit(_send, event, body, delivery)] = n
                    in_flight[organizer] += 1
                    endpoint.in_flight += 1
                return True
        return False

    while queued or running:
        while len(running) < SENDERS and start_one():
            pass
        if not running:
            assert not queued, "with none in flight, some post may always start"
            break
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            n = running.pop(future)
            attempt = attempts[n] = future.result()
            in_flight[posts[n][0].organizer_id] -= 1
            endpoint = endpoints[attempt.endpoint.pk]
            endpoint.in_flight -= 1
            if attempt.stalled:
                endpoint.unanswered += 1
                endpoint.stalled = True
            elif not (attempt.give_up or attempt.backed_off):
                endpoint.unanswered = 0
    return attempts


def _backed_off(event: WebhookEvent, delivery: WebhookDelivery, *, at: datetime) -> bool:
    """Whether the endpoint's breaker was open when the delivery was read. A ping's first
    attempt goes out anyway: the organizer testing is checking a fix (its retries wait). A
    disabled endpoint's deliveries fail instead (`_send`)."""
    until = delivery.endpoint.backoff_until
    if until is None or until <= at or not delivery.endpoint.is_active:
        return False
    return not (event.type == WebhookEvent.Type.PING and delivery.attempt_count == 0)


def _not_sent(delivery: WebhookDelivery, *, at: datetime) -> Attempt:
    return Attempt(
        delivery_id=delivery.pk,
        endpoint=delivery.endpoint,
        attempted_at=at,
        status_code=None,
        duration_ms=0,
        error=BACKED_OFF,
        give_up=False,
        backed_off=True,
    )


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
    elif _backed_off(event, delivery, at=attempted_at):
        return _not_sent(delivery, at=attempted_at)
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
    seconds = time.monotonic() - started
    answered_well = status_code is not None and (
        200 <= status_code < 300 or seconds < settings.WEBHOOK_TIMEOUT_SECONDS / 2
    )
    return Attempt(
        delivery_id=delivery.pk,
        endpoint=endpoint,
        attempted_at=attempted_at,
        status_code=status_code,
        duration_ms=round(seconds * 1000),
        error=error,
        give_up=disabled,
        stalled=not disabled and not answered_well,
    )


@transaction.atomic
def _attempts_record(attempts: list[Attempt]) -> None:
    """Log attempts and decide what follows each: delivered, the next retry, or failed.

    A delivery not sent because its endpoint is backed off is retried at the cool-down's end,
    however old it is: only an attempt that was sent can be its last. A failed one to an
    endpoint backed off now is retried then too, not sooner (to be skipped).

    Locks: the deliveries' rows, so a task run twice logs both attempts but decides once; then
    the rows of the endpoints whose breaker or health may change (`_breakers_record`).
    """
    locked = WebhookDelivery.objects.select_for_update().filter(
        pk__in=[a.delivery_id for a in attempts]
    )
    deliveries = {d.pk: d for d in locked.order_by("pk")}
    backed_off_until = _breakers_record(attempts)
    now = timezone.now()
    decided, logged = [], []
    for attempt in attempts:
        delivery = deliveries.get(attempt.delivery_id)
        if delivery is None:
            continue  # the endpoint was deleted meanwhile
        next_retry_at = None
        if delivery.status == WebhookDelivery.Status.PENDING:
            delivery.attempt_count += 1
            until = backed_off_until.get(attempt.endpoint.pk, attempt.endpoint.backoff_until)
            if until is not None and until <= now:
                until = None
            if attempt.succeeded:
                delivery.status = WebhookDelivery.Status.DELIVERED
                delivery.delivered_at = now
            elif attempt.backed_off:
                next_retry_at = until or now
            elif attempt.give_up or now - delivery.pending_since >= timedelta(
                seconds=settings.WEBHOOK_RETRY_FOR_SECONDS
            ):
                delivery.status = WebhookDelivery.Status.FAILED
            else:
                next_retry_at = attempt.attempted_at + retry_delay(delivery.attempt_count)
                next_retry_at = max(next_retry_at, until or next_retry_at)
            if next_retry_at is not None:
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
        if not (attempt.give_up or attempt.backed_off):
            _endpoint_health_record(
                endpoint=attempt.endpoint, succeeded=attempt.succeeded, at=attempt.attempted_at
            )
    _deliveries_save(decided)
    WebhookAttempt.objects.bulk_create(logged)


def _breakers_record(attempts: list[Attempt]) -> dict[int, datetime | None]:
    """Count each endpoint's attempts in a row without an answer in good time; at
    WEBHOOK_BREAKER_FAILURES, back it off for a cool-down (WEBHOOK_BREAKER_COOLDOWN_SECONDS,
    doubled each time it is backed off again, at most the retry schedule's cap); an answer
    resets the count and closes it. Returns until when each endpoint locked is backed off.

    Locks: in id order, the rows of the endpoints with an attempt that failed or was not sent,
    or whose breaker or failing run, as read, an answer may end; the health updates that
    follow touch only these. None for a batch of successes to healthy endpoints: no query.
    """
    concerned, sent = set(), {}
    for attempt in attempts:
        if attempt.give_up:
            continue
        endpoint = attempt.endpoint
        if not attempt.succeeded or (
            endpoint.unanswered_count or endpoint.backoff_until or endpoint.failing_since
        ):
            concerned.add(endpoint.pk)
        if not attempt.backed_off:
            sent.setdefault(endpoint.pk, []).append(attempt)
    if not concerned:
        return {}
    locked = WebhookEndpoint.objects.select_for_update().filter(pk__in=concerned).order_by("pk")
    now = timezone.now()
    backed_off_until = {}
    for endpoint in locked:
        state = (endpoint.unanswered_count, endpoint.backoff_seconds, endpoint.backoff_until)
        unanswered, seconds, until = state
        stalled = False
        for attempt in sent.get(endpoint.pk, []):
            if attempt.stalled:
                unanswered, stalled = unanswered + 1, True
            else:
                unanswered, seconds, until = 0, 0, None
        reopens = until is None or until <= now  # not an attempt sent before it was opened
        if stalled and unanswered >= settings.WEBHOOK_BREAKER_FAILURES and reopens:
            seconds = min(
                2 * seconds or settings.WEBHOOK_BREAKER_COOLDOWN_SECONDS,
                settings.WEBHOOK_RETRY_MAX_DELAY_SECONDS,
            )
            until = now + timedelta(seconds=seconds)
            logger.warning("webhook endpoint %s backed off for %s s", endpoint.pk, seconds)
        if (unanswered, seconds, until) != state:
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
                unanswered_count=unanswered, backoff_seconds=seconds, backoff_until=until
            )
        backed_off_until[endpoint.pk] = until
    return backed_off_until


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

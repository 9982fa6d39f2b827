"""What follows a webhook attempt (CONTRACT §13): its log, the delivery's next step (delivered,
the next retry, or failed), the endpoint's circuit breaker and health. `delivering` sends.

One organizer's slow endpoints must not hold up everyone's deliveries (issue 28). An endpoint
whose attempts keep getting no answer costs a whole timeout each, so it has a circuit breaker:
after WEBHOOK_BREAKER_FAILURES of them in a row it is backed off for a cool-down, during which
its due attempts are logged as not sent and rescheduled to the cool-down's end, at no cost to
the network or the worker; the first attempt after it is a probe, and an answer closes the
breaker.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone

from organizers.models import Membership

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .queueing import QUEUE

logger = logging.getLogger(__name__)


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


def attempts_record(attempts: list[Attempt]) -> None:
    """Log attempts and decide what follows each (`_attempts_log`); then stamp the endpoints
    that answered (`_answers_record`), outside that transaction: its locks stay the
    deliveries' and the breakers'."""
    _attempts_log(attempts)
    _answers_record(attempts, at=timezone.now())


@transaction.atomic
def _attempts_log(attempts: list[Attempt]) -> None:
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
                QUEUE.deliver.using(run_after=next_retry_at).enqueue(delivery.pk)
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


# An endpoint's `answered_at` is written at most this often, whatever the rate of its answers.
ANSWERED_AT_EVERY = timedelta(seconds=1)


def _answers_record(attempts: list[Attempt], *, at: datetime) -> None:
    """Stamp the endpoints that answered one of `attempts` in good time (any status: a receiver
    that answers 500 at once is not hung), when their stamp as read is older than
    ANSWERED_AT_EVERY: one single-row UPDATE per such endpoint, which writes only a stamp
    still that old (another worker's may be newer)."""
    stale_before = at - ANSWERED_AT_EVERY
    answered = {
        a.endpoint.pk: a.endpoint
        for a in attempts
        if a.status_code is not None and not (a.stalled or a.backed_off or a.give_up)
    }
    for pk, endpoint in sorted(answered.items()):
        if endpoint.answered_at is not None and endpoint.answered_at >= stale_before:
            continue
        stale = Q(answered_at__isnull=True) | Q(answered_at__lt=stale_before)
        WebhookEndpoint.objects.filter(stale, pk=pk).update(answered_at=at)


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
        QUEUE.endpoint_disabled_email.enqueue(endpoint.pk)


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

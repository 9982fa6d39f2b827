"""Sending webhook events (CONTRACT §13): the bodies of the delivery tasks.

The outbox relay queues a task per batch of one organizer's events (`outbox`): it renders the
events a change's statement recorded, creates a delivery per endpoint subscribed to each,
posts them and logs every attempt in one transaction (`outcomes.attempts_record`, which also
schedules the retry of a failed one as a task of its own, `webhook_delivery_attempt`, until
the delivery is a day old). Pings and the admin's redeliveries go the same way as retries.

One organizer cannot slow another (issue 28): a worker of the webhooks queue runs many tasks
at once (`manage.py run_worker`'s threads), a task's POSTs go out together, and an organizer
has at most WEBHOOK_IN_FLIGHT_PER_ORGANIZER attempts in flight across all workers
(`statements.organizer_slots`). A task that finds its organizer's slots all taken queues its
work again a moment later, behind other organizers' tasks, and frees its thread; so one
organizer's hung receivers hold at most that many threads, and another organizer's first
attempt starts as soon as its task is claimed. An endpoint that keeps not answering is backed
off by its circuit breaker (`outcomes`), and then sent one POST at a time.
"""

from __future__ import annotations

import json
import random
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from . import tasks
from .exceptions import WebhookUrlRefused
from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from .network import DeliveryError, post, target_check
from .outbox import webhook_events_complete
from .outcomes import Attempt, attempts_record, webhook_endpoint_disabled_notify
from .secrets import secret_decrypt
from .statements import organizer_slots

__all__ = [
    "webhook_delivery_attempt",
    "webhook_endpoint_disabled_notify",
    "webhook_events_dispatch",
]

USER_AGENT = "ticketing-webhooks/1"
# A retry task runs at its delivery's `next_attempt_at`; one found well before it is a stale
# copy whose chain was already continued.
NOT_DUE_LEEWAY_SECONDS = 5
# The threads that post, shared by all the tasks a worker runs at once; each task uses at most
# its organizer's free slots of them.
SENDERS = 64
_senders = ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="webhook-send")
# The POSTs a dispatch task makes at most; its other events go to a task of their own. Even if
# every one times out, a task ends within BATCH_POSTS × WEBHOOK_TIMEOUT_SECONDS (one slot),
# well within the lease after which a task still running is deemed lost (TASK_LEASE_SECONDS).
BATCH_POSTS = 16
BACKED_OFF = "endpoint backed off: not sent"


# Work whose organizer had no free slot is queued again at a lower priority, so that the tasks
# of other organizers, new or due, go first.
WAITING_PRIORITY = -10


# How long a task whose organizer's endpoints answer waits in its thread for a free slot: those
# holding them are likely done in a moment (one organizer's burst goes out without gaps).
SLOT_WAIT_SECONDS = 0.5


def _stalled(endpoints: list[WebhookEndpoint]) -> bool:
    """Whether one of the endpoints stopped answering (as last read)."""
    return any(e.unanswered_count or e.backoff_until for e in endpoints)


def _slots(organizer_id: int, endpoints: list[WebhookEndpoint], want: int):
    """The organizer's slots for a dispatch's `want` attempts to `endpoints`
    (`statements.organizer_slots`), waited for a moment only when none of them stopped
    answering: a task of an organizer whose receivers hang frees its thread at once."""
    return organizer_slots(
        organizer_id=organizer_id,
        want=want,
        cap=settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER,
        wait_seconds=0 if _stalled(endpoints) else SLOT_WAIT_SECONDS,
    )


def _later(endpoints: list[WebhookEndpoint]) -> dict:
    """How work whose organizer had no free slot is queued again (`Task.using`). With endpoints
    that answer, a slot is likely free in a moment; with one that stopped answering, about
    when one of the attempts holding them times out. Jittered, so that they spread."""
    seconds = settings.WEBHOOK_TIMEOUT_SECONDS / 2 if _stalled(endpoints) else 0.5
    seconds *= random.uniform(0.5, 1.5)
    return {"priority": WAITING_PRIORITY, "run_after": timezone.now() + timedelta(seconds=seconds)}


def webhook_events_dispatch(*, event_ids: list[str]) -> None:
    """Send recorded events to the endpoints subscribed to them (a dispatch task's body).

    Run twice (a worker lost mid-task), it adds no delivery (one per event and endpoint) and
    sends again only those never attempted (receivers deduplicate by `webhook-id`): a failed
    one already has its retry scheduled.
    """
    by_organizer: dict[int, list[WebhookEvent]] = {}
    for event in webhook_events_complete(event_ids):
        by_organizer.setdefault(event.organizer_id, []).append(event)
    for organizer_id, events in by_organizer.items():
        _organizer_dispatch(organizer_id, events)


def _organizer_dispatch(organizer_id: int, events: list[WebhookEvent]) -> None:
    """One organizer's events: their deliveries created in one INSERT, their POSTs sent within
    the organizer's free slots. Events beyond BATCH_POSTS go to another task; with no free
    slot, all of them, a moment later."""
    pending = _fan_out(organizer_id, events)
    posts, left, sending = [], [], []
    for event in events:
        deliveries = pending[event.pk]
        if posts and len(posts) + len(deliveries) > BATCH_POSTS:
            left.append(event.pk)
            continue
        sending.append(event.pk)
        body = json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False)
        posts.extend((event, body, delivery) for delivery in deliveries)
    if left:
        tasks.webhook_events_dispatch.enqueue(left)
    if not posts:
        return
    endpoints = [delivery.endpoint for _, _, delivery in posts]
    with _slots(organizer_id, endpoints, want=len(posts)) as slots:
        if not slots:
            tasks.webhook_events_dispatch.using(**_later(endpoints)).enqueue(sending)
            return
        attempts_record(_send_all(posts, slots=slots))  # logged before the slots are free


def _fan_out(organizer_id: int, events: list[WebhookEvent]) -> dict[str, list[WebhookDelivery]]:
    """Each event's deliveries never attempted, after creating those missing: one per active
    endpoint subscribed to it."""
    endpoints = list(WebhookEndpoint.objects.filter(organizer_id=organizer_id, is_active=True))
    WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                event=event,
                endpoint=endpoint,
                pending_since=event.created_at,
                next_attempt_at=event.created_at,
            )
            for event in events
            for endpoint in endpoints
            if endpoint.subscribes_to(event.type)
        ],
        ignore_conflicts=True,
    )
    pending: dict[str, list[WebhookDelivery]] = {event.pk: [] for event in events}
    for delivery in WebhookDelivery.objects.filter(
        event__in=events, status=WebhookDelivery.Status.PENDING, attempt_count=0
    ).select_related("endpoint"):
        pending[delivery.event_id].append(delivery)
    return pending


def webhook_delivery_attempt(*, delivery_id: int) -> None:
    """Attempt one pending delivery (a retry, a ping or a redelivery).

    A delivery that is gone (endpoint deleted), no longer pending, or whose next attempt is
    not due (a task run twice, after its first run scheduled the next) is skipped. A non-2xx
    answer, a timeout, a refused connection or a refused address is a failed attempt: the next
    is scheduled, or the delivery fails once it is a day old. With its organizer's slots all
    taken, it is tried again a moment later.
    """
    delivery = (
        WebhookDelivery.objects.select_related("event", "endpoint").filter(pk=delivery_id).first()
    )
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return
    due = delivery.next_attempt_at
    if due is not None and due > timezone.now() + timedelta(seconds=NOT_DUE_LEEWAY_SECONDS):
        return
    event = delivery.event
    body = json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False)
    if not _goes_out(event, delivery, at=timezone.now()):
        attempts_record([_send(event, body, delivery)])  # not sent: no slot needed
        return
    # Never waited for in the thread: pings and retries are where one organizer's volume is.
    cap = settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER
    with organizer_slots(organizer_id=event.organizer_id, want=1, cap=cap) as slots:
        if not slots:
            tasks.webhook_deliver.using(**_later([delivery.endpoint])).enqueue(delivery.pk)
            return
        attempts_record([_send(event, body, delivery)])


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


def _send_all(
    posts: list[tuple[WebhookEvent, str, WebhookDelivery]], *, slots: int
) -> list[Attempt]:
    """Send one organizer's POSTs, `slots` at a time; their attempts, in the posts' order.

    An endpoint that stopped answering gets one POST at a time, and none once the breaker trips.
    """
    if len(posts) == 1:
        return [_send(*posts[0])]
    attempts: list[Attempt | None] = [None] * len(posts)
    queued = list(range(len(posts)))
    endpoints = {
        delivery.endpoint_id: _EndpointInBatch(unanswered=delivery.endpoint.unanswered_count)
        for _, _, delivery in posts
    }
    running: dict[Future, int] = {}
    while queued or running:
        for n in list(queued):
            if len(running) >= slots:
                break
            event, body, delivery = posts[n]
            endpoint = endpoints[delivery.endpoint_id]
            if endpoint.waiting():
                continue
            queued.remove(n)
            now = timezone.now()
            if endpoint.tripped() or _backed_off(event, delivery, at=now):
                attempts[n] = _not_sent(delivery, at=now)
            else:
                running[_senders.submit(_send, event, body, delivery)] = n
                endpoint.in_flight += 1
        if not running:
            continue  # all left were decided without a POST, or may start now
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            attempt = attempts[running.pop(future)] = future.result()
            endpoint = endpoints[attempt.endpoint.pk]
            endpoint.in_flight -= 1
            if attempt.stalled:
                endpoint.unanswered += 1
                endpoint.stalled = True
            elif not (attempt.give_up or attempt.backed_off):
                endpoint.unanswered = 0
    return attempts


def _goes_out(event: WebhookEvent, delivery: WebhookDelivery, *, at: datetime) -> bool:
    """Whether an attempt would reach the network (not disabled, not backed off)."""
    if not delivery.endpoint.is_active and event.type != WebhookEvent.Type.PING:
        return False
    return not _backed_off(event, delivery, at=at)


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

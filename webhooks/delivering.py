"""Sending webhook events (CONTRACT §13): the bodies of the delivery tasks.

The outbox relay queues a task per batch of one organizer's events (`outbox`): it renders the
events a change's statement recorded, creates a delivery per endpoint subscribed to each,
posts them (`sending`) and logs every attempt in one transaction (`outcomes.attempts_record`,
which also schedules the retry of a failed one as a task of its own,
`webhook_delivery_attempt`, until the delivery is a day old). Pings and the admin's
redeliveries go the same way as retries.

One organizer's events go out as fast as its receivers answer, and one organizer cannot slow
another (issues 28, 43). Its WEBHOOK_IN_FLIGHT_PER_ORGANIZER attempts in flight across all
workers are lanes of TASK_IN_FLIGHT (`statements.organizer_slots`): a task takes a lane and
sends its POSTs that many at a time, so several of an organizer's tasks send at once, one per
lane, on as many workers as there are. The cap bounds what one organizer takes from the others
(its hung receivers hold at most its lanes' threads, a quarter of a worker's by default), not
how fast it goes while they answer.

Order: the oldest work first. The relay queues the oldest events first (pings and redeliveries
join that line as they come); a retry is queued for the time it is due, and django-tasks runs
the tasks due at a time before those queued without one, so retries due go before new events.
A task that finds no lane free waits for one in its organizer's line (first come first served,
at most one waiting per lane) while its endpoints answer, else is queued again a moment later
at the same priority, for a time: so it, too, keeps its place before newer work.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from .outbox import webhook_events_complete
from .outcomes import attempts_record
from .queueing import QUEUE
from .sending import Routes, goes_out, send, send_all
from .statements import organizer_lanes_quiet_seconds, organizer_slots

# A retry task runs at its delivery's `next_attempt_at`; one found well before it is a stale
# copy whose chain was already continued.
NOT_DUE_LEEWAY_SECONDS = 5
# A task's attempts in flight at once: the organizer's cap is lanes of this many.
TASK_IN_FLIGHT = 4
# The POSTs a dispatch task makes at most (a relay's batch of events to one endpoint); its other
# events go to a task of their own. Even if every one times out, a task ends within
# BATCH_POSTS / TASK_IN_FLIGHT × WEBHOOK_TIMEOUT_SECONDS, well within the lease after which a
# task still running is deemed lost (TASK_LEASE_SECONDS).
BATCH_POSTS = 20
# How long a task whose organizer's endpoints answer waits in line for a lane: those holding
# them are likely done in a moment (one organizer's burst goes out without gaps).
SLOT_WAIT_SECONDS = 0.5
# Lanes whose every holder has waited on its receivers this long, when none of them answered
# lately, count as hung before any of their attempts times out.
LANES_HUNG_SECONDS = 2.0


def lanes() -> tuple[int, int]:
    """How many of an organizer's tasks send at once, across the workers, and how many POSTs
    each has in flight: WEBHOOK_IN_FLIGHT_PER_ORGANIZER in lanes of TASK_IN_FLIGHT."""
    cap = settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER
    in_flight = min(TASK_IN_FLIGHT, cap)
    return max(1, cap // in_flight), in_flight


def _stalled(endpoints: list[WebhookEndpoint]) -> bool:
    """Whether one of the endpoints stopped answering (as last read)."""
    return any(e.unanswered_count or e.backoff_until for e in endpoints)


def _lane(organizer_id: int, endpoints: list[WebhookEndpoint]):
    """One of the organizer's lanes for a task posting to `endpoints`, waited for in line a
    moment only when none of them stopped answering: a task of an organizer whose receivers
    hang frees its thread at once."""
    return organizer_slots(
        organizer_id=organizer_id,
        want=1,
        cap=lanes()[0],
        wait_seconds=0 if _stalled(endpoints) else SLOT_WAIT_SECONDS,
    )


def _later(organizer_id: int, endpoints: list[WebhookEndpoint]) -> dict:
    """How work whose organizer had no lane free is queued again (`Task.using`): at the same
    priority, for a time, so that it goes before the tasks queued without one (new work). With
    endpoints that answer, a lane is likely free in a moment; with one that stopped answering,
    or none that answered lately and lanes whose holders have all waited on their receivers for
    seconds, about when one of the attempts holding them times out, jittered, so that they
    spread: an organizer whose receivers hang does not fill the queue ahead of the others' new
    work with its own coming back every half second."""
    seconds = SLOT_WAIT_SECONDS
    if _stalled(endpoints) or (_unanswered_lately(endpoints) and _lanes_hung(organizer_id)):
        seconds = settings.WEBHOOK_TIMEOUT_SECONDS / 2 * random.uniform(0.5, 1.5)
    return {"run_after": timezone.now() + timedelta(seconds=seconds)}


def _unanswered_lately(endpoints: list[WebhookEndpoint]) -> bool:
    """Whether none of the endpoints answered an attempt within the last half timeout (as last
    read): lanes held by attempts to receivers that answer are busy, not hung, however long
    a batch takes on a machine whose cores are busy."""
    since = timezone.now() - timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS / 2)
    return all(e.answered_at is None or e.answered_at < since for e in endpoints)


def _lanes_hung(organizer_id: int) -> bool:
    quiet = organizer_lanes_quiet_seconds(organizer_id=organizer_id, cap=lanes()[0])
    return quiet >= LANES_HUNG_SECONDS


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
    """One organizer's events, within one of its lanes: their deliveries created in one
    INSERT, their POSTs sent TASK_IN_FLIGHT at a time. Events beyond BATCH_POSTS go to another
    task; with no lane free, all of them, a moment later."""
    endpoints = [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(organizer_id=organizer_id, is_active=True)
        if any(endpoint.subscribes_to(event.type) for event in events)
    ]
    if not endpoints:  # those made before a deactivation (a task run twice) fail, unsent
        posts, _ = _batch(_fan_out([], events), events)
        if posts:
            attempts_record(send_all(posts, in_flight=1))
        return
    with _lane(organizer_id, endpoints) as lane:
        if not lane:
            later = _later(organizer_id, endpoints)
            QUEUE.events_dispatch.using(**later).enqueue([e.pk for e in events])
            return
        posts, left = _batch(_fan_out(endpoints, events), events)
        if left:  # for now: before the tasks queued without a time (newer events)
            QUEUE.events_dispatch.using(run_after=timezone.now()).enqueue(left)
        if posts:
            attempts_record(send_all(posts, in_flight=lanes()[1]))  # logged, then the lane free


def _batch(pending: dict[str, list[WebhookDelivery]], events: list[WebhookEvent]):
    """The POSTs of the first events, up to BATCH_POSTS (at least one event's), with their
    bodies; and the ids of the events left for another task."""
    posts, left = [], []
    for event in events:
        deliveries = pending[event.pk]
        if left or (posts and len(posts) + len(deliveries) > BATCH_POSTS):
            left.append(event.pk)
            continue
        body = json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False)
        posts.extend((event, body, delivery) for delivery in deliveries)
    return posts, left


def _fan_out(
    endpoints: list[WebhookEndpoint], events: list[WebhookEvent]
) -> dict[str, list[WebhookDelivery]]:
    """Each event's deliveries never attempted, after creating those missing: one per active
    endpoint subscribed to it."""
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
    is scheduled, or the delivery fails once it is a day old. With no lane of its organizer's
    free, it is tried again a moment later.
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
    if not goes_out(event, delivery, at=timezone.now()):
        attempts_record([send(event, body, delivery, routes=Routes())])  # not sent: no lane
        return
    with _lane(event.organizer_id, [delivery.endpoint]) as lane:
        if not lane:
            later = _later(event.organizer_id, [delivery.endpoint])
            QUEUE.deliver.using(**later).enqueue(delivery.pk)
            return
        attempts_record([send(event, body, delivery, routes=Routes())])

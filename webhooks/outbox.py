"""The transactional outbox of webhook events (issue 27): the change records, a relay dispatches.

A change records its events as rows of this app's own table, in its own transaction (the ORM,
`services.webhook_event_record`) or its own statement (the gate's admission,
`statements.event_insert_sql`): a rollback sends nothing and a commit loses nothing. The rows
not yet dispatched (`dispatched_at` None, a partial index) are the outbox. A relay
(`webhook_outbox_relay`, run by each worker of the webhooks queue: `manage.py run_worker`)
claims the oldest with `SELECT ... FOR UPDATE SKIP LOCKED`, so relays of several workers take
different rows, and queues their dispatch through django-tasks' `enqueue`, in the transaction
that marks them dispatched: a task per organizer's batch of events, so that one organizer's
backlog is a few tasks the others' overtake, and no row is dispatched twice or lost.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from ticketing.outbox import relay_forever

from .models import WebhookEvent
from .queueing import QUEUE
from .renderers import renderer_for

# Events per dispatch task: its fan-out is one INSERT and one transaction of attempts.
BATCH_EVENTS = 20
# Events a relay pass claims at most (a few statements whatever the number).
RELAY_LIMIT = 500


def webhook_outbox_relay(*, limit: int = RELAY_LIMIT) -> int:
    """Dispatch the oldest events not yet dispatched, up to `limit`; how many there were.

    Locks: the claimed events' rows (skipping those another relay holds) until the commit,
    which marks them dispatched with their tasks queued. On SQLite, which has no row locks, the
    write serializes relays: the rows are taken by the UPDATE, and read back by its stamp.
    """
    stamp = timezone.now()
    with transaction.atomic():
        claimed = list(
            WebhookEvent.objects.filter(dispatched_at__isnull=True)
            .order_by("created_at")
            .select_for_update(skip_locked=True)
            .values_list("pk", "organizer_id")[:limit]
        )
        if not claimed:
            return 0
        ids = [pk for pk, _ in claimed]
        marked = WebhookEvent.objects.filter(pk__in=ids, dispatched_at__isnull=True).update(
            dispatched_at=stamp
        )
        if marked != len(claimed):  # another relay took some first (SQLite)
            claimed = list(
                WebhookEvent.objects.filter(pk__in=ids, dispatched_at=stamp).values_list(
                    "pk", "organizer_id"
                )
            )
        by_organizer: dict[int, list[str]] = {}
        for pk, organizer_id in claimed:
            by_organizer.setdefault(organizer_id, []).append(pk)
        for event_ids in by_organizer.values():
            for start in range(0, len(event_ids), BATCH_EVENTS):
                QUEUE.events_dispatch.enqueue(event_ids[start : start + BATCH_EVENTS])
    return len(claimed)


def webhook_outbox_relay_forever(*, poll_seconds: float, stop: Callable[[], bool]) -> None:
    """Relay until `stop()` (`ticketing.outbox.relay_forever`)."""
    relay_forever(webhook_outbox_relay, limit=RELAY_LIMIT, poll_seconds=poll_seconds, stop=stop)


def webhook_events_complete(event_ids: list[str]) -> list[WebhookEvent]:
    """The events of `event_ids` that still exist, in that order, each with its data: an event
    recorded by a statement (its data None) is rendered first from its `source` by the renderer
    of its type (`renderers`), and saved.

    The data is saved once, before the first delivery: of two runs of a task (a worker lost),
    the second finds it saved, or loses the conditional UPDATE and reads the winner's, so every
    attempt and redelivery sends the same body.
    """
    found = WebhookEvent.objects.in_bulk(event_ids)
    bare: dict[str, list[WebhookEvent]] = {}
    for event in found.values():
        if event.payload.get("data") is None and event.source is not None:
            bare.setdefault(event.type, []).append(event)
    if bare:
        with transaction.atomic():  # one commit for all; rows written in id order
            for type, events in bare.items():
                data = renderer_for(type)(events)
                for event in sorted(events, key=lambda e: e.pk):
                    WebhookEvent.objects.filter(pk=event.pk, payload__data=None).update(
                        payload={**event.payload, "data": data[event.pk]}, source=None
                    )
        # As stored (PostgreSQL orders a JSON object's keys): the bytes every attempt sends.
        found |= WebhookEvent.objects.in_bulk([e.pk for events in bare.values() for e in events])
    return [found[pk] for pk in dict.fromkeys(event_ids) if pk in found]

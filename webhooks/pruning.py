"""Old webhook events go, with their deliveries and attempts (`manage.py prune`).

Every change an endpoint subscribes to leaves an event, a delivery per endpoint and an attempt
per POST, and nothing else ever deletes them: an import of 10,000 tickets left 10,060 rows. An
event is kept while it waits in the outbox or any of its deliveries is pending, and for
`older_than` after the last change to any of them (a redelivery from the admin makes it recent
again).
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from .models import WebhookAttempt, WebhookDelivery, WebhookEvent


@dataclass(frozen=True)
class PrunedEvents:
    events: int
    deliveries: int
    attempts: int


def webhook_events_prune(*, older_than: datetime, batch_size: int = 500) -> PrunedEvents:
    """Delete the events created before `older_than` whose deliveries (if any) are all finished
    and unchanged since, with those deliveries and their attempts.

    `batch_size` events per transaction, so that no statement holds locks on a large share of
    the tables while check-ins write their events. The events are found without an order (the
    table has no index on its time, which every check-in would pay for): oldest rows first in
    practice, and every batch starts over from what is left.

    Locks: each batch's deliveries, re-read under the lock, so an event whose delivery was just
    sent again (admin, API) stays.
    """
    busy = WebhookDelivery.objects.filter(event=OuterRef("pk")).filter(
        Q(status=WebhookDelivery.Status.PENDING) | Q(updated_at__gte=older_than)
    )
    candidates = (
        WebhookEvent.objects.filter(created_at__lt=older_than, dispatched_at__isnull=False)
        .exclude(Exists(busy))
        .order_by()
    )
    events = deliveries = attempts = 0
    while True:
        with transaction.atomic():
            ids = set(candidates.values_list("pk", flat=True)[:batch_size])
            if not ids:
                break
            locked = (
                WebhookDelivery.objects.select_for_update()
                .filter(event_id__in=ids)
                .order_by("pk")
                .values_list("event_id", "status", "updated_at")
            )
            ids -= {
                event_id
                for event_id, status, updated_at in locked
                if status == WebhookDelivery.Status.PENDING or updated_at >= older_than
            }
            attempts += WebhookAttempt.objects.filter(delivery__event_id__in=ids).delete()[0]
            deliveries += WebhookDelivery.objects.filter(event_id__in=ids).delete()[0]
            events += WebhookEvent.objects.filter(pk__in=ids).delete()[0]
    return PrunedEvents(events=events, deliveries=deliveries, attempts=attempts)

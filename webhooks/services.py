"""Webhook endpoints and events (CONTRACT §13); `delivering` sends them.

An event is recorded by the service that makes the change, inside its transaction
(`webhook_event_record`): one row of this app's table, which is also the outbox (`outbox`), so a
rollback sends nothing and a commit is never lost, and a change costs one insert whatever the
number of endpoints. Workers (`manage.py run_worker`) then fan the event out to the endpoints
subscribed to it. A change that is one SQL statement (the gate's admission) writes that row from
the statement itself (`statements.event_insert_sql`), with the rows it changed; the dispatch
renders the event's data from them by its type (`renderers`).
"""

from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from organizers.models import Organizer

from . import tasks
from .envelopes import EVENT_TYPES, event_envelope
from .exceptions import WebhookEndpointDisabled, WebhookEndpointLimitReached
from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from .network import target_check
from .secrets import secret_encrypt, secret_generate
from .selectors import webhook_wants


def webhook_url_check(*, url: str) -> None:
    """Raises: WebhookUrlRefused, if webhooks may not be sent to `url` (registration check)."""
    target_check(url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_URLS)


def webhook_endpoints_room_check(*, organizer_id: int) -> None:
    """Raises: WebhookEndpointLimitReached, if the organizer has
    WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER endpoints already: each endpoint's attempts take a share
    of the workers every organizer shares."""
    limit = settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER
    if WebhookEndpoint.objects.filter(organizer_id=organizer_id).count() >= limit:
        raise WebhookEndpointLimitReached(limit)


def webhook_endpoint_create(
    *, organizer_id: int, url: str, event_types: list[str]
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it with its signing secret, which is shown only now.

    Locks: the organizer's row (FOR NO KEY UPDATE: rows that refer to it are still written),
    so that concurrent registrations are counted one after another.
    Raises: WebhookUrlRefused, WebhookEndpointLimitReached.
    """
    assert event_types == ["*"] or set(event_types) <= set(WebhookEvent.Type.values), event_types
    webhook_url_check(url=url)  # a DNS lookup: before the lock
    secret = secret_generate()
    with transaction.atomic():
        list(Organizer.objects.select_for_update(no_key=True).filter(pk=organizer_id))
        webhook_endpoints_room_check(organizer_id=organizer_id)
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


def _event_create(
    *, organizer_id: int, event_id: int | None, type: str, data, dispatched: bool = False
) -> WebhookEvent:
    event = _event_built(organizer_id=organizer_id, event_id=event_id, type=type, data=data)
    event.dispatched_at = event.created_at if dispatched else None
    event.save(force_insert=True)
    return event


def _event_built(*, organizer_id: int, event_id: int | None, type: str, data) -> WebhookEvent:
    """An event not yet saved, in the outbox (`dispatched_at` empty), with its envelope."""
    event = WebhookEvent(organizer_id=organizer_id, type=type)
    event.payload = event_envelope(
        id=event.id,
        type=type,
        created_at=event.created_at,
        organizer_id=organizer_id,
        event_id=event_id,
        data=data,
    )
    return event


def webhook_event_record(
    *,
    organizer_id: int,
    event_id: int | None,
    type: str,
    data: dict | Callable[[], dict],
) -> WebhookEvent | None:
    """Record an event for the organizer's endpoints subscribed to `type`.

    Call it inside the transaction of the change: its row, in the outbox until a relay
    dispatches it (`outbox`), commits or rolls back with the change. Its dispatch fans it out
    to the endpoints subscribed when it runs, a moment later: the change's transaction reads no
    endpoint and writes nothing per endpoint. `data` is `{"ticket": ...}` or `{"order": ...}` as
    the API renders them; pass a function to build it only when some endpoint wants the event.
    Returns the event, or None when no endpoint wants it (one query, in the transaction: a
    change committed after an endpoint subscribed has its event).
    """
    assert type in EVENT_TYPES, type
    if not webhook_wants(organizer_id=organizer_id, type=type):
        return None
    return _event_create(
        organizer_id=organizer_id,
        event_id=event_id,
        type=type,
        data=data() if callable(data) else data,
    )


def webhook_events_record(
    *, organizer_id: int, event_id: int | None, type: str, datas: Iterable[dict]
) -> int:
    """`webhook_event_record` for many changes of one kind at once (an import): asked once
    whether some endpoint wants `type`, written in a few INSERTs. `datas` is read only
    if so. Returns how many events were recorded."""
    assert type in EVENT_TYPES, type
    if not webhook_wants(organizer_id=organizer_id, type=type):
        return 0
    events = [
        _event_built(organizer_id=organizer_id, event_id=event_id, type=type, data=data)
        for data in datas
    ]
    WebhookEvent.objects.bulk_create(events, batch_size=1000)
    return len(events)


@transaction.atomic
def webhook_endpoint_ping(*, endpoint: WebhookEndpoint) -> WebhookEvent:
    """Send a `ping` to this endpoint only (also when disabled, and its first attempt also when
    the endpoint is backed off: it is how one checks a fix)."""
    event = _event_create(
        organizer_id=endpoint.organizer_id,
        event_id=None,
        type=WebhookEvent.Type.PING,
        data={"webhook": {"id": endpoint.pk, "url": endpoint.url}},
        dispatched=True,  # its one delivery is queued here
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
    assert event_types == ["*"] or set(event_types) <= set(WebhookEvent.Type.values), event_types
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
    if url != endpoint.url:
        webhook_url_check(url=url)
    if is_active and not endpoint.is_active:
        endpoint.failing_since = endpoint.disabled_at = None
    endpoint.url, endpoint.event_types, endpoint.is_active = url, event_types, is_active
    endpoint.save()
    return endpoint

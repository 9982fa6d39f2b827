"""Webhook endpoints and events (CONTRACT §13); `delivering` sends them.

An event is recorded by the service that makes the change, inside its transaction
(`webhook_event_record`): the event row and one task to dispatch it, so a rollback sends nothing
and a commit is never lost, and a change costs two inserts whatever the number of endpoints.
Workers (`manage.py run_worker`) then fan the event out to the endpoints subscribed to it.
A change that is one SQL statement (the gate's admission) writes only the task from that
statement (`webhook_event_insert_sql`), with the event's id and envelope; the task renders the
event's data, writes the event and dispatches it.
"""

import functools
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models.signals import pre_save
from django.utils import timezone
from django_tasks.base import Task
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

from organizers.models import Organizer
from ticketing.api.fields import datetime_representation

from . import delivering, tasks
from .exceptions import WebhookEndpointDisabled, WebhookEndpointLimitReached
from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent, new_event_id
from .network import target_check
from .secrets import secret_encrypt, secret_generate
from .selectors import webhook_subscriptions_changed, webhook_types_subscribed

# The types a change records; a `ping` is sent only by `webhook_endpoint_ping`, to one endpoint,
# so a subscription to it (allowed, as to any type) brings nothing else.
EVENT_TYPES = [t for t in WebhookEvent.Type.values if t != WebhookEvent.Type.PING]


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


def _envelope(
    *, id: str, type: str, created_at: datetime, organizer_id: int, event_id: int | None, data
) -> dict:
    return {
        "id": id,
        "type": type,
        "created_at": datetime_representation(created_at),
        "organizer_id": organizer_id,
        "event_id": event_id,
        "data": data,
    }


def _event_create(*, organizer_id: int, event_id: int | None, type: str, data) -> WebhookEvent:
    event = WebhookEvent(organizer_id=organizer_id, type=type)
    event.payload = _envelope(
        id=event.id,
        type=type,
        created_at=event.created_at,
        organizer_id=organizer_id,
        event_id=event_id,
        data=data,
    )
    event.save(force_insert=True)
    return event


def webhook_wants(*, organizer_id: int, type: str) -> bool:
    """Whether some active endpoint of the organizer may want `type` (from the cache, usually:
    the gate asks it to decide whether its one statement also records the event)."""
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
    """Send a `ping` to this endpoint only (also when disabled, and its first attempt also when
    the endpoint is backed off: it is how one checks a fix)."""
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
    assert event_types == ["*"] or set(event_types) <= set(WebhookEvent.Type.values), event_types
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
    if url != endpoint.url:
        webhook_url_check(url=url)
    if is_active and not endpoint.is_active:
        endpoint.failing_since = endpoint.disabled_at = None
    webhook_subscriptions_changed(organizer_id=endpoint.organizer_id)
    endpoint.url, endpoint.event_types, endpoint.is_active = url, event_types, is_active
    endpoint.save()
    return endpoint


# --- Recorded by the change's own statement -------------------------------------------------


def webhook_event_insert_sql(*, source: str, task: Task, args: Sequence[str]) -> str:
    """A clause of a WITH (`webhook_task AS (...)`) that records an event for each row of
    `source`, a FROM clause (the change's statement yields one row, or none when it changed
    nothing): the task `task(event id, *args, envelope)`, `args` being SQL expressions over
    `source` and `envelope` the event's body without its data. The task renders the data from
    them and calls `webhook_events_complete`, which writes the event. Values:
    `webhook_event_insert_params`.

    For a change that is one autocommit statement, to which `webhook_event_record` would add a
    transaction and three round trips. The event's own row is left to the task: one row fewer
    in the change's statement was about 4% of the gate's throughput with an endpoint
    subscribed. Each column is written as the ORM would write it, from its model field;
    tests/webhooks/test_statement_events.py holds the task row to the one django-tasks'
    `enqueue` writes.
    """
    backend = task.get_backend()
    assert isinstance(backend, DatabaseBackend), "the task row goes to django-tasks' table"
    backend.validate_task(task)  # as `enqueue` does, once
    task_args = ", ".join(
        ["%(webhook_event_id)s::text", *args, "%(webhook_event_envelope)s::jsonb"]
    )
    args_kwargs = (
        f"jsonb_build_object('args', jsonb_build_array({task_args}), 'kwargs', '{{}}'::jsonb)"
    )
    return _insert_sql(DBTaskResult, "webhook_task", source, {"args_kwargs": args_kwargs})


def webhook_event_insert_params(
    *, organizer_id: int, event_id: int | None, type: str, task: Task, at: datetime
) -> dict[str, Any]:
    """The values of `webhook_event_insert_sql` for one change made `at`: a new event's id and
    the envelope `webhook_event_record` writes, and the task row with a fresh id."""
    assert type in EVENT_TYPES, type
    pk = new_event_id()
    envelope = _envelope(
        id=pk, type=type, created_at=at, organizer_id=organizer_id, event_id=event_id, data=None
    )
    return {
        "webhook_event_id": pk,
        "webhook_event_envelope": json.dumps(envelope),
        **_task_row(task),
        "webhook_task_id": task.get_backend()._get_id(),
        "webhook_task_enqueued_at": at,
    }


def webhook_events_complete(
    *,
    envelopes: dict[str, dict | None],
    render: Callable[[list[str]], dict[str, dict]],
) -> set[str]:
    """Write the events recorded by a statement (`webhook_event_insert_sql`) with their data,
    then dispatch them: the body of their tasks, run together (`batching`). `envelopes` maps
    each event's id to the envelope its task was given (None for a task queued before the
    statement left the event's row to its task: that row exists, its data None). `render` gets
    the ids of those still without data and returns the data of each. Returns the ids of the
    events left for another run (`delivering.webhook_events_fan_out`).

    The data is saved once, before the first delivery: a second run of a task (a worker lost)
    finds the event saved, or loses the insert (or the conditional UPDATE) and reads the
    winner's, so every attempt and redelivery sends the same body; dispatching twice sends
    nothing twice.
    """
    found = WebhookEvent.objects.in_bulk(list(envelopes))
    new = sorted(pk for pk, envelope in envelopes.items() if pk not in found and envelope)
    if new:  # an organizer deleted since takes its events with it, as a cascade would have
        organizers = {envelopes[pk]["organizer_id"] for pk in new}
        kept = set(Organizer.objects.filter(pk__in=organizers).values_list("pk", flat=True))
        new = [pk for pk in new if envelopes[pk]["organizer_id"] in kept]
    bare = sorted(pk for pk, event in found.items() if event.payload["data"] is None)
    if new or bare:
        data = render(sorted([*new, *bare]))
        with transaction.atomic():  # one commit for all; rows locked in id order
            WebhookEvent.objects.bulk_create(
                [_event_from(envelopes[pk], data[pk]) for pk in new], ignore_conflicts=True
            )
            for pk in bare:
                WebhookEvent.objects.filter(pk=pk, payload__data=None).update(
                    payload={**found[pk].payload, "data": data[pk]}
                )
        # As stored (PostgreSQL orders a JSON object's keys): the bytes every attempt sends.
        found |= WebhookEvent.objects.in_bulk([*new, *bare])
    return delivering.webhook_events_fan_out([found[pk] for pk in envelopes if pk in found])


def _event_from(envelope: dict, data: dict) -> WebhookEvent:
    return WebhookEvent(
        id=envelope["id"],
        organizer_id=envelope["organizer_id"],
        type=envelope["type"],
        payload={**envelope, "data": data},
        created_at=datetime.fromisoformat(envelope["created_at"]),
    )


def _insert_sql(model: type[models.Model], name: str, source: str, statement: dict) -> str:
    fields = model._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    values = ", ".join(statement.get(f.attname) or f"%({name}_{f.attname})s" for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    return f"{name} AS (\n  INSERT INTO {table} ({columns})\n  SELECT {values} FROM {source}\n)"


@functools.cache
def _task_row(task: Task) -> dict[str, Any]:
    """The task row's values but its id, time (`enqueued_at`) and arguments, the same for every
    call: the row `enqueue` builds, as `save()` would insert it (after the `pre_save` signal,
    where django-tasks sets `run_after`)."""
    backend = task.get_backend()
    row = DBTaskResult(
        priority=task.priority,
        task_path=task.module_path,
        queue_name=task.queue_name,
        run_after=task.run_after,
        backend_name=backend.alias,
    )
    db = connections[DEFAULT_DB_ALIAS]
    pre_save.send(sender=DBTaskResult, instance=row, raw=False, using=db.alias, update_fields=None)
    return {
        f"webhook_task_{f.attname}": f.get_db_prep_save(f.pre_save(row, True), db)
        for f in DBTaskResult._meta.concrete_fields
        if f.attname not in ("id", "enqueued_at", "args_kwargs")
    }

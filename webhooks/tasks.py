"""Background work of webhooks, run by `manage.py run_worker` (django-tasks' database backend).

Tasks take ids, never instances, and call the code that holds the rules; what that code queues
next it queues through `queueing.QUEUE`, which `WebhooksConfig.ready()` fills with these.
"""

from django_tasks import task

from . import delivering, outcomes


@task(queue_name="webhooks")
def webhook_events_dispatch(event_ids: list[str]) -> None:
    """Events the outbox relay claimed, all of one organizer's (`outbox`)."""
    delivering.webhook_events_dispatch(event_ids=event_ids)


@task(queue_name="webhooks")
def webhook_event_dispatch(event_id: str) -> None:
    """One event, as queued before the outbox: kept for the tasks of a deploy in progress."""
    delivering.webhook_events_dispatch(event_ids=[event_id])


@task(queue_name="webhooks")
def webhook_deliver(delivery_id: int) -> None:
    delivering.webhook_delivery_attempt(delivery_id=delivery_id)


@task(queue_name="email")
def webhook_endpoint_disabled_email(endpoint_id: int) -> None:
    outcomes.webhook_endpoint_disabled_notify(endpoint_id=endpoint_id)

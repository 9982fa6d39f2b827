"""Background work of webhooks, run by `manage.py run_worker` (django-tasks' database backend).

Tasks take ids, never instances, and call the services, which hold the rules.
"""

from django_tasks import task

from . import delivering
from .batching import tasks_run_batched


@task(queue_name="webhooks")
def webhook_event_dispatch(event_id: str) -> None:
    tasks_run_batched(args=[event_id], run=_events_dispatch, size=delivering.BATCH_EVENTS)


def _events_dispatch(calls: list[list]) -> set[int]:
    event_ids = [event_id for (event_id,) in calls]
    left = delivering.webhook_events_dispatch(event_ids=event_ids)
    return {n for n, event_id in enumerate(event_ids) if event_id in left}


@task(queue_name="webhooks")
def webhook_deliver(delivery_id: int) -> None:
    delivering.webhook_delivery_attempt(delivery_id=delivery_id)


@task(queue_name="email")
def webhook_endpoint_disabled_email(endpoint_id: int) -> None:
    delivering.webhook_endpoint_disabled_notify(endpoint_id=endpoint_id)

"""Background work of webhooks, run by `manage.py run_worker` (django-tasks' database backend).

Tasks take ids, never instances, and call the services, which hold the rules.
"""

from django_tasks import task

from . import delivering


@task()
def webhook_event_dispatch(event_id: str) -> None:
    delivering.webhook_event_dispatch(event_id=event_id)


@task()
def webhook_deliver(delivery_id: int) -> None:
    delivering.webhook_delivery_attempt(delivery_id=delivery_id)


@task()
def webhook_endpoint_disabled_email(endpoint_id: int) -> None:
    delivering.webhook_endpoint_disabled_notify(endpoint_id=endpoint_id)

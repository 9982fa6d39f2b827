"""`manage.py prune`, the daily clean-up (issue 28): finished task rows, webhook events whose
deliveries are over, expired tokens and sessions go; what is pending or recent stays."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from oauth2_provider.models import AccessToken

from tests.factories import WebhookEndpointFactory
from tests.support import mint_token
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent
from webhooks.pruning import PrunedEvents, webhook_events_prune

from .queue_tasks import task_echo

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


def _task_row(name: str, **fields) -> str:
    """A task row (its argument is `name`), then set to `fields` (a state, a time)."""
    result = task_echo.enqueue(name)
    DBTaskResult.objects.filter(pk=result.id).update(**fields)
    return name


def _event(endpoints, *, age: timedelta, deliveries=(), attempts: int = 1) -> str:
    """An event `age` old with a delivery per (status, age since its last change), each to its
    own endpoint and with `attempts` attempts."""
    now = timezone.now()
    event = WebhookEvent.objects.create(
        organizer=endpoints[0].organizer,
        type="ticket.created",
        payload={},
        created_at=now - age,
        dispatched_at=now - age,  # out of the outbox
    )
    for endpoint, (status, changed) in zip(endpoints, deliveries, strict=False):
        delivery = WebhookDelivery.objects.create(event=event, endpoint=endpoint, status=status)
        WebhookAttempt.objects.bulk_create(
            WebhookAttempt(delivery=delivery, attempted_at=now - changed, duration_ms=5)
            for _ in range(attempts)
        )
        WebhookDelivery.objects.filter(pk=delivery.pk).update(updated_at=now - changed)
    return event.pk


@pytest.fixture
def endpoints(organizer):
    return WebhookEndpointFactory.create_batch(2, organizer=organizer)


def test_prune_deletes_what_is_over_and_keeps_what_is_pending_or_recent(
    settings, endpoints, application
):
    settings.TASK_RESULT_RETENTION_DAYS = 7
    settings.TASK_FAILED_RETENTION_DAYS = 30
    settings.WEBHOOK_EVENT_RETENTION_DAYS = 30
    now = timezone.now()
    done, failed = TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED
    _task_row("done 8 days ago", status=done, finished_at=now - 8 * DAY)
    _task_row("done 6 days ago", status=done, finished_at=now - 6 * DAY)
    _task_row("failed 8 days ago", status=failed, finished_at=now - 8 * DAY)
    _task_row("failed 31 days ago", status=failed, finished_at=now - 31 * DAY)
    _task_row("waiting 60 days", enqueued_at=now - 60 * DAY)
    _task_row("retry not yet due", enqueued_at=now - 60 * DAY, run_after=now + DAY)
    _task_row("running", status=TaskResultStatus.RUNNING, started_at=now - 60 * DAY)

    over = [("delivered", 40 * DAY), ("failed", 39 * DAY)]
    _event(endpoints, age=40 * DAY, deliveries=over, attempts=3)  # goes
    _event(endpoints, age=40 * DAY)  # no endpoint wanted it: goes
    half_sent = _event(
        endpoints, age=40 * DAY, deliveries=[("delivered", 40 * DAY), ("pending", DAY)]
    )
    sent_again = _event(endpoints, age=40 * DAY, deliveries=[("delivered", DAY)])  # redelivered
    recent = _event(endpoints, age=DAY, deliveries=[("delivered", DAY)])

    mint_token(application=application, expires_in=-(40 * 24 * 3600))
    valid = mint_token(application=application)
    Session.objects.create(session_key="old", session_data="", expire_date=now - DAY)
    Session.objects.create(session_key="live", session_data="", expire_date=now + DAY)

    out = StringIO()
    call_command("prune", stdout=out)

    kept_tasks = DBTaskResult.objects.values_list("args_kwargs__args__0", flat=True)
    assert sorted(kept_tasks) == [
        "done 6 days ago",
        "failed 8 days ago",
        "retry not yet due",
        "running",
        "waiting 60 days",
    ]
    assert set(WebhookEvent.objects.values_list("pk", flat=True)) == {
        half_sent,
        sent_again,
        recent,
    }
    assert sorted(WebhookDelivery.objects.values_list("event_id", flat=True)) == sorted(
        [half_sent, half_sent, sent_again, recent]
    )
    assert WebhookAttempt.objects.count() == 4
    assert list(AccessToken.objects.values_list("token", flat=True)) == [valid]
    assert list(Session.objects.values_list("session_key", flat=True)) == ["live"]
    assert (
        "Deleted 2 webhook events, 2 deliveries and 6 attempts older than 30 days."
        in out.getvalue().splitlines()
    )


def test_webhook_events_are_pruned_in_batches_until_none_is_left(endpoints):
    old = [_event(endpoints, age=40 * DAY, deliveries=[("delivered", 40 * DAY)]) for _ in range(5)]
    pending = _event(endpoints, age=40 * DAY, deliveries=[("pending", 40 * DAY)])

    pruned = webhook_events_prune(older_than=timezone.now() - 30 * DAY, batch_size=2)

    assert pruned == PrunedEvents(events=5, deliveries=5, attempts=5)
    assert list(WebhookEvent.objects.values_list("pk", flat=True)) == [pending]
    assert set(old).isdisjoint(WebhookEvent.objects.values_list("pk", flat=True))
    assert WebhookDelivery.objects.get().status == "pending"

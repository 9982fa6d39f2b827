"""Recording events, the retry schedule, and endpoints that keep failing (CONTRACT §13)."""

from datetime import timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tests.factories import MembershipFactory, OrganizerFactory, UserFactory, WebhookEndpointFactory
from webhooks.delivering import webhook_delivery_attempt, webhook_events_dispatch
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.outcomes import retry_delay, webhook_endpoint_disabled_notify
from webhooks.selectors import webhook_wants
from webhooks.services import webhook_event_record, webhook_events_record

from .helpers import endpoint_for

pytestmark = pytest.mark.django_db

TICKET = {"ticket": {"id": 5, "reference_code": "ABC123"}}


def _iso(value) -> str:
    return timezone.localtime(value).isoformat()


def test_event_record_writes_one_row_in_the_outbox_whatever_the_endpoints(
    organizer, django_assert_num_queries
):
    WebhookEndpointFactory.create_batch(3, organizer=organizer)

    # Whether an endpoint wants it, then the event; no task, no row per endpoint.
    with transaction.atomic(), django_assert_num_queries(2):
        event = webhook_event_record(
            organizer_id=organizer.id, event_id=12, type="ticket.checked_in", data=TICKET
        )

    assert WebhookEvent.objects.get() == event
    assert event.payload == {
        "id": event.id,
        "type": "ticket.checked_in",
        "created_at": _iso(event.created_at),
        "organizer_id": organizer.id,
        "event_id": 12,
        "data": TICKET,
    }
    assert event.id.startswith("evt_") and len(event.id) == 36
    assert event.dispatched_at is None  # in the outbox
    assert not DBTaskResult.objects.exists()
    assert not WebhookDelivery.objects.exists()


def test_dispatch_sends_to_each_active_endpoint_subscribed_once(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    everything, _ = endpoint_for(receiver, organizer)
    check_ins, _ = endpoint_for(receiver, organizer, event_types=["ticket.checked_in"])
    endpoint_for(receiver, organizer, event_types=["ticket.revoked"])
    inactive, _ = endpoint_for(receiver, organizer)
    WebhookEndpoint.objects.filter(pk=inactive.pk).update(is_active=False)
    endpoint_for(receiver, OrganizerFactory())
    with transaction.atomic():
        event = webhook_event_record(
            organizer_id=organizer.id, event_id=12, type="ticket.checked_in", data=TICKET
        )

    webhook_events_dispatch(event_ids=[event.id])
    webhook_events_dispatch(event_ids=[event.id])  # a task run twice sends nothing more

    assert receiver.ids() == {event.id: 2}
    assert [b["data"] for b in receiver.bodies()] == [TICKET, TICKET]
    deliveries = WebhookDelivery.objects.order_by("endpoint_id")
    assert [(d.endpoint_id, d.status, d.attempt_count) for d in deliveries] == [
        (everything.id, "delivered", 1),
        (check_ins.id, "delivered", 1),
    ]
    assert WebhookAttempt.objects.filter(status_code=200).count() == 2


def test_event_record_without_endpoints_costs_one_query_and_builds_nothing(
    organizer, django_assert_num_queries
):
    WebhookEndpointFactory(organizer=organizer, event_types=["order.cancelled"])

    def data():
        raise AssertionError("serialized although no endpoint wants the event")

    with django_assert_num_queries(1):
        result = webhook_event_record(
            organizer_id=organizer.id, event_id=1, type="ticket.created", data=data
        )

    assert result is None
    assert not WebhookEvent.objects.exists() and not DBTaskResult.objects.exists()


def test_events_record_writes_a_batch_in_a_few_inserts(organizer, django_assert_max_num_queries):
    WebhookEndpointFactory(organizer=organizer)
    webhook_wants(organizer_id=organizer.id, type="ticket.created")
    datas = [{"ticket": {"id": n}} for n in range(1, 1201)]

    # PostgreSQL: one INSERT per thousand; SQLite binds fewer values per statement (about 100 rows).
    with transaction.atomic(), django_assert_max_num_queries(12):
        count = webhook_events_record(
            organizer_id=organizer.id, event_id=7, type="ticket.created", datas=iter(datas)
        )

    assert count == 1200
    events = list(WebhookEvent.objects.order_by("created_at", "id"))
    assert sorted(e.payload["data"]["ticket"]["id"] for e in events) == list(range(1, 1201))
    assert {(e.type, e.payload["event_id"], e.dispatched_at) for e in events} == {
        ("ticket.created", 7, None)
    }
    assert len({e.id for e in events}) == 1200


def test_events_record_without_endpoints_reads_nothing_of_the_batch(organizer):
    def datas():
        raise AssertionError("rendered although no endpoint wants the events")
        yield

    assert (
        webhook_events_record(
            organizer_id=organizer.id, event_id=7, type="ticket.created", datas=datas()
        )
        == 0
    )
    assert not WebhookEvent.objects.exists()


def test_event_record_is_undone_with_the_change(organizer):
    WebhookEndpointFactory(organizer=organizer)

    with pytest.raises(RuntimeError), transaction.atomic():
        webhook_event_record(organizer_id=organizer.id, event_id=1, type="ticket.revoked", data={})
        raise RuntimeError

    assert not WebhookEvent.objects.exists()
    assert not WebhookDelivery.objects.exists()
    assert not DBTaskResult.objects.exists()


def test_retries_back_off_exponentially_for_at_least_a_day():
    delays = [retry_delay(n) for n in range(1, 40)]
    assert delays[:4] == [timedelta(seconds=s) for s in (15, 30, 60, 120)]
    assert delays[0] <= timedelta(seconds=30)  # the first retry within 30 s
    assert max(delays) == timedelta(hours=4)
    waited, attempts = timedelta(0), 1
    while waited < timedelta(days=1):
        waited += retry_delay(attempts)
        attempts += 1
    assert attempts == 16  # the last one a day after the first; then the delivery fails


def _failing_delivery(organizer, receiver, **delivery_fields):
    receiver.statuses = [503] * 5
    endpoint, _ = endpoint_for(receiver, organizer)
    with transaction.atomic():
        event = webhook_event_record(
            organizer_id=organizer.id, event_id=1, type="ticket.created", data={}
        )
    delivery = WebhookDelivery.objects.create(
        event=event, endpoint=endpoint, **{"pending_since": event.created_at, **delivery_fields}
    )
    return endpoint, delivery


def test_a_failed_attempt_schedules_the_next_as_a_task(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    _, delivery = _failing_delivery(organizer, receiver)
    DBTaskResult.objects.all().delete()

    webhook_delivery_attempt(delivery_id=delivery.pk)

    attempt = WebhookAttempt.objects.get()
    assert (attempt.status_code, attempt.error) == (503, "")
    assert attempt.next_retry_at - attempt.attempted_at == timedelta(seconds=15)
    task = DBTaskResult.objects.get()
    assert task.run_after == attempt.next_retry_at
    assert task.args_kwargs == {"args": [delivery.pk], "kwargs": {}}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.next_attempt_at) == ("pending", attempt.next_retry_at)


def test_a_delivery_fails_after_a_day_of_retries(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    _, delivery = _failing_delivery(
        organizer, receiver, pending_since=timezone.now() - timedelta(days=1)
    )
    DBTaskResult.objects.all().delete()

    webhook_delivery_attempt(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.next_attempt_at) == ("failed", None)
    assert WebhookAttempt.objects.get().next_retry_at is None
    assert not DBTaskResult.objects.exists()


def test_an_endpoint_failing_for_three_days_is_disabled_and_its_owners_told(
    organizer, receiver, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    owner = UserFactory(username="owner", email="owner@example.com")
    MembershipFactory(user=owner, organizer=organizer, role="owner")
    MembershipFactory(
        user=UserFactory(email="admin@example.com"), organizer=organizer, role="admin"
    )
    endpoint, delivery = _failing_delivery(organizer, receiver)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        failing_since=timezone.now() - timedelta(days=3, seconds=1)
    )

    webhook_delivery_attempt(delivery_id=delivery.pk)

    endpoint.refresh_from_db()
    assert endpoint.is_active is False and endpoint.disabled_at is not None
    email_task = DBTaskResult.objects.get(
        task_path="webhooks.tasks.webhook_endpoint_disabled_email"
    )
    assert email_task.args_kwargs == {"args": [endpoint.pk], "kwargs": {}}
    webhook_endpoint_disabled_notify(endpoint_id=endpoint.pk)
    [message] = mail.outbox
    assert message.to == ["owner@example.com"]
    assert message.subject == f"Webhook disabled: {endpoint.url}"
    assert endpoint.url in message.body and "3 days" in message.body
    # Its pending deliveries then fail without being sent, when their retries come.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    webhook_delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert WebhookAttempt.objects.order_by("id").last().error == "endpoint disabled: not sent"
    assert len(receiver.requests) == 1


def test_a_failure_shorter_than_three_days_keeps_the_endpoint(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, delivery = _failing_delivery(organizer, receiver)
    since = timezone.now() - timedelta(days=2)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=since)

    webhook_delivery_attempt(delivery_id=delivery.pk)

    endpoint.refresh_from_db()
    assert (endpoint.is_active, endpoint.failing_since) == (True, since)


def test_a_success_ends_the_failing_run(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, delivery = _failing_delivery(organizer, receiver)
    receiver.statuses = []
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        failing_since=timezone.now() - timedelta(days=2)
    )

    webhook_delivery_attempt(delivery_id=delivery.pk)

    endpoint.refresh_from_db()
    assert endpoint.failing_since is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count) == ("delivered", 1)


def test_an_attempt_on_a_delivered_delivery_sends_nothing(organizer, receiver, settings):
    """A task run twice (a requeued task whose worker was only slow) sends once."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    _, delivery = _failing_delivery(organizer, receiver)
    receiver.statuses = []
    webhook_delivery_attempt(delivery_id=delivery.pk)

    webhook_delivery_attempt(delivery_id=delivery.pk)

    assert len(receiver.requests) == 1
    assert WebhookAttempt.objects.count() == 1


def test_a_dispatch_run_again_leaves_a_failed_delivery_to_its_retry(organizer, receiver, settings):
    """Run twice, the dispatch neither sends a failed delivery again nor starts a second chain."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    receiver.statuses = [503]
    endpoint_for(receiver, organizer)
    with transaction.atomic():
        event = webhook_event_record(
            organizer_id=organizer.id, event_id=1, type="ticket.created", data={}
        )
    DBTaskResult.objects.all().delete()

    webhook_events_dispatch(event_ids=[event.id])
    webhook_events_dispatch(event_ids=[event.id])

    assert len(receiver.requests) == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempt_count) == ("pending", 1)
    assert DBTaskResult.objects.get().args_kwargs == {"args": [delivery.pk], "kwargs": {}}


def test_a_retry_found_before_its_time_is_a_stale_copy_and_sends_nothing(
    organizer, receiver, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    _, delivery = _failing_delivery(
        organizer, receiver, next_attempt_at=timezone.now() + timedelta(minutes=2)
    )

    webhook_delivery_attempt(delivery_id=delivery.pk)

    assert receiver.requests == [] and not WebhookAttempt.objects.exists()

"""One organizer's endpoints cannot hold up everyone's webhooks (issue 28): endpoints are capped
per organizer, pings through `/test` are limited per endpoint, an endpoint that does not answer
is backed off (a circuit breaker), and an organizer has at most WEBHOOK_IN_FLIGHT_PER_ORGANIZER
attempts in flight across the workers, whose threads serve the others meanwhile."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    OrganizerFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.oauth.support import wait_for_fresh_window
from tests.support import TokenClient, mint_token
from webhooks import admin, delivering
from webhooks.delivering import webhook_delivery_attempt, webhook_events_dispatch
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.outbox import webhook_outbox_relay
from webhooks.services import webhook_endpoint_ping, webhook_event_record
from webhooks.statements import organizer_lanes_quiet_seconds

from .helpers import Receiver, endpoint_for, lanes_held_elsewhere, wait_for

PUBLIC_URL = "https://93.184.215.14/hooks"  # a public address: no DNS needed
BACKED_OFF = "endpoint backed off: not sent"
RETRY_TASK = "webhooks.tasks.webhook_deliver"
DISPATCH_TASK = "webhooks.tasks.webhook_events_dispatch"


def _owner_client(organizer) -> TokenClient:
    user = UserFactory(username=f"owner-{organizer.pk}")
    MembershipFactory(user=user, organizer=organizer, role="owner")
    application = ApplicationFactory(organizer=organizer)
    return TokenClient(mint_token(application=application, user=user, scope="public organizer"))


def _webhooks(organizer, suffix: str = "") -> str:
    return f"/api/public/organizers/{organizer.id}/webhooks{suffix}"


# --- Endpoints per organizer ----------------------------------------------------------------


@pytest.mark.django_db
def test_the_21st_endpoint_is_refused_and_nothing_is_created(organizer):
    WebhookEndpointFactory.create_batch(20, organizer=organizer)
    WebhookEndpointFactory()  # another organizer's does not count
    client = _owner_client(organizer)

    response = client.post(
        _webhooks(organizer), {"url": PUBLIC_URL, "event_types": ["*"]}, format="json"
    )

    message = "An organizer may register at most 20 webhook endpoints; delete one first."
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "invalid_parameters",
        "message": message,
        "fields": {"non_field_errors": [message]},
    }
    assert WebhookEndpoint.objects.filter(organizer=organizer).count() == 20


@pytest.mark.django_db
def test_the_cap_is_a_setting_and_deleting_one_makes_room(organizer, settings):
    settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER = 2
    client = _owner_client(organizer)
    body = {"url": PUBLIC_URL, "event_types": ["*"]}

    statuses = [client.post(_webhooks(organizer), body, format="json").status_code for _ in "abc"]
    first = WebhookEndpoint.objects.filter(organizer=organizer).first()
    client.delete(_webhooks(organizer, f"/{first.pk}"))
    again = client.post(_webhooks(organizer), body, format="json")

    assert statuses == [201, 201, 400]
    assert again.status_code == 201
    assert WebhookEndpoint.objects.filter(organizer=organizer).count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_registrations_stop_at_the_cap(organizer, settings):
    settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER = 3
    WebhookEndpointFactory(organizer=organizer)
    token = _owner_client(organizer).token
    count = 6
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def register(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            response = TokenClient(token).post(
                _webhooks(organizer), {"url": PUBLIC_URL, "event_types": ["*"]}, format="json"
            )
            results[i] = (response.status_code, response.json().get("error"))
        except Exception as exc:  # reported below
            results[i] = exc
        finally:
            connection.close()  # each thread opened its own connection

    threads = [threading.Thread(target=register, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(results) == [(201, None)] * 2 + [(400, "invalid_parameters")] * 4
    assert WebhookEndpoint.objects.filter(organizer=organizer).count() == 3


@pytest.mark.django_db
def test_the_admin_refuses_an_endpoint_over_the_cap(organizer, settings):
    settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER = 2
    WebhookEndpointFactory.create_batch(2, organizer=organizer)
    user = UserFactory(username="admin-user", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role="admin")
    client = Client()
    client.force_login(user)

    response = client.post(
        "/admin/webhooks/webhookendpoint/add/",
        {"organizer": organizer.pk, "url": PUBLIC_URL, "event_types": ["*"]},
    )

    assert response.status_code == 200  # the form again, with the error
    assert (
        "An organizer may register at most 2 webhook endpoints; delete one first."
        in response.content.decode()
    )
    assert WebhookEndpoint.objects.filter(organizer=organizer).count() == 2


@pytest.mark.django_db
def test_the_admin_tells_the_loser_of_a_race_for_the_last_place(organizer, settings, monkeypatch):
    """The form found room; a registration committed since took it: the service, counting under
    the organizer's lock, refuses, and the admin says so instead of failing."""
    settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER = 2
    WebhookEndpointFactory.create_batch(2, organizer=organizer)
    monkeypatch.setattr(admin, "webhook_endpoints_room_check", lambda **kwargs: None)
    user = UserFactory(username="admin-user", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role="admin")
    client = Client()
    client.force_login(user)

    response = client.post(
        "/admin/webhooks/webhookendpoint/add/",
        {"organizer": organizer.pk, "url": PUBLIC_URL, "event_types": ["*"]},
        follow=True,
    )

    assert response.redirect_chain == [("/admin/webhooks/webhookendpoint/add/", 302)]
    assert [str(m) for m in response.context["messages"]] == [
        "An organizer may register at most 2 webhook endpoints; delete one first."
    ]
    assert WebhookEndpoint.objects.filter(organizer=organizer).count() == 2


# --- /test per endpoint ---------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sixth_ping_of_an_endpoint_within_a_minute_is_a_429(organizer):
    endpoint, other = WebhookEndpointFactory.create_batch(2, organizer=organizer)
    client = _owner_client(organizer)
    wait_for_fresh_window(f"webhook-endpoint:{endpoint.pk}", margin=10)

    statuses = [client.post(_webhooks(organizer, f"/{endpoint.pk}/test")).status_code]
    statuses += [client.post(_webhooks(organizer, f"/{endpoint.pk}/test")).status_code]
    statuses += [client.post(_webhooks(organizer, f"/{endpoint.pk}/test")).status_code]
    statuses += [client.post(_webhooks(organizer, f"/{endpoint.pk}/test")).status_code]
    statuses += [client.post(_webhooks(organizer, f"/{endpoint.pk}/test")).status_code]
    refused = client.post(_webhooks(organizer, f"/{endpoint.pk}/test"))
    another = client.post(_webhooks(organizer, f"/{other.pk}/test"))

    assert statuses == [200] * 5
    assert refused.status_code == 429
    retry_after = int(refused["Retry-After"])
    assert 1 <= retry_after <= 60
    assert refused.json() == {
        "success": False,
        "error": "rate_limited",
        "message": f"Too many requests; try again in {retry_after} seconds.",
    }
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 5
    assert another.status_code == 200


@pytest.mark.django_db
def test_a_refused_ping_of_another_organizers_endpoint_is_a_404_not_a_count(organizer):
    theirs = WebhookEndpointFactory(organizer=OrganizerFactory())
    client = _owner_client(organizer)

    responses = [client.post(_webhooks(organizer, f"/{theirs.pk}/test")) for _ in range(6)]

    assert [r.status_code for r in responses] == [404] * 6
    assert (
        _owner_client(theirs.organizer)
        .post(_webhooks(theirs.organizer, f"/{theirs.pk}/test"))
        .status_code
        == 200
    )


# --- The circuit breaker --------------------------------------------------------------------


@pytest.fixture
def hanging(settings, receiver):
    """The receiver records each POST and answers none (until the test ends); attempts give
    up after half a second."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_BREAKER_FAILURES = 3
    settings.WEBHOOK_BREAKER_COOLDOWN_SECONDS = 60
    receiver.answering.clear()
    yield receiver
    receiver.answering.set()


def _pending(endpoint, n: int, **fields) -> list[WebhookDelivery]:
    """`n` deliveries to the endpoint, due now, never attempted."""
    deliveries = []
    for i in range(n):
        with transaction.atomic():
            event = webhook_event_record(
                organizer_id=endpoint.organizer_id,
                event_id=1,
                type="ticket.created",
                data={"ticket": {"id": i}},
            )
        deliveries.append(
            WebhookDelivery.objects.create(
                event=event,
                endpoint=endpoint,
                **{
                    "pending_since": event.created_at,
                    "next_attempt_at": event.created_at,
                    **fields,
                },
            )
        )
    return deliveries


def _breaker(endpoint) -> tuple:
    endpoint.refresh_from_db()
    return endpoint.unanswered_count, endpoint.backoff_seconds, endpoint.backoff_until


def _retry_tasks(delivery) -> list[DBTaskResult]:
    tasks = DBTaskResult.objects.filter(task_path=RETRY_TASK).order_by("enqueued_at")
    return [t for t in tasks if t.args_kwargs["args"] == [delivery.pk]]


def _open(endpoint, *, until, seconds: int = 60) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        unanswered_count=3, backoff_seconds=seconds, backoff_until=until
    )


@pytest.mark.django_db
def test_an_endpoint_that_never_answers_is_backed_off_after_three_timeouts(
    organizer, hanging, settings
):
    endpoint, _ = endpoint_for(hanging, organizer)
    *timing_out, fourth = _pending(endpoint, 4)

    before = timezone.now()
    for delivery in timing_out:
        webhook_delivery_attempt(delivery_id=delivery.pk)
    after = timezone.now()

    assert len(hanging.requests) == 3
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).answered_at is None  # no answer
    count, seconds, until = _breaker(endpoint)
    assert (count, seconds) == (3, 60)
    assert before + timedelta(seconds=60) <= until <= after + timedelta(seconds=60)
    # A due attempt now costs no timeout: it would wait 30 s if it were sent.
    settings.WEBHOOK_TIMEOUT_SECONDS = 30
    started = time.monotonic()
    webhook_delivery_attempt(delivery_id=fourth.pk)
    assert time.monotonic() - started < 10
    assert len(hanging.requests) == 3
    attempt = WebhookAttempt.objects.get(delivery=fourth)
    assert (attempt.status_code, attempt.error, attempt.duration_ms, attempt.next_retry_at) == (
        None,
        BACKED_OFF,
        0,
        until,
    )
    fourth.refresh_from_db()
    assert (fourth.status, fourth.attempt_count, fourth.next_attempt_at) == ("pending", 1, until)
    assert [t.run_after for t in _retry_tasks(fourth)] == [until]
    # The breaker's state is the endpoint's, unchanged by what it did not send.
    assert _breaker(endpoint) == (3, 60, until)


@pytest.mark.django_db
def test_the_third_timeout_schedules_its_retry_after_the_cool_down(organizer, hanging):
    endpoint, _ = endpoint_for(hanging, organizer)
    deliveries = _pending(endpoint, 3)

    for delivery in deliveries:
        webhook_delivery_attempt(delivery_id=delivery.pk)

    _, _, until = _breaker(endpoint)
    first, _, third = (WebhookAttempt.objects.get(delivery=d) for d in deliveries)
    assert first.next_retry_at - first.attempted_at == timedelta(seconds=15)  # not yet open
    assert third.next_retry_at == until  # not 15 s later, to be skipped then


@pytest.mark.django_db
def test_a_probe_after_the_cool_down_that_times_out_doubles_it(organizer, hanging):
    endpoint, _ = endpoint_for(hanging, organizer)
    [delivery] = _pending(endpoint, 1)
    _open(endpoint, until=timezone.now() - timedelta(seconds=1))

    before = timezone.now()
    webhook_delivery_attempt(delivery_id=delivery.pk)

    assert len(hanging.requests) == 1  # the cool-down was over: sent
    count, seconds, until = _breaker(endpoint)
    assert (count, seconds) == (4, 120)
    assert until >= before + timedelta(seconds=120)


@pytest.mark.django_db
def test_the_cool_down_stops_doubling_at_the_retry_schedules_cap(organizer, hanging, settings):
    endpoint, _ = endpoint_for(hanging, organizer)
    [delivery] = _pending(endpoint, 1)
    _open(endpoint, until=timezone.now() - timedelta(seconds=1), seconds=3 * 60 * 60)

    webhook_delivery_attempt(delivery_id=delivery.pk)

    assert _breaker(endpoint)[1] == settings.WEBHOOK_RETRY_MAX_DELAY_SECONDS == 4 * 60 * 60


@pytest.mark.django_db
def test_a_success_closes_the_breaker(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, _ = endpoint_for(receiver, organizer)
    [delivery] = _pending(endpoint, 1)
    _open(endpoint, until=timezone.now() - timedelta(seconds=1))

    webhook_delivery_attempt(delivery_id=delivery.pk)

    assert _breaker(endpoint) == (0, 0, None)
    delivery.refresh_from_db()
    assert delivery.status == "delivered"


@pytest.mark.django_db
def test_a_prompt_error_answer_resets_the_count_of_unanswered_attempts(
    organizer, receiver, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    receiver.statuses = [503]
    endpoint, _ = endpoint_for(receiver, organizer)
    [delivery] = _pending(endpoint, 1)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(unanswered_count=2)

    webhook_delivery_attempt(delivery_id=delivery.pk)

    assert _breaker(endpoint) == (0, 0, None)


@pytest.mark.django_db
def test_a_backed_off_delivery_is_retried_after_the_cool_down_even_past_a_day(organizer, hanging):
    endpoint, _ = endpoint_for(hanging, organizer)
    [delivery] = _pending(endpoint, 1, pending_since=timezone.now() - timedelta(days=2))
    until = timezone.now() + timedelta(seconds=60)
    _open(endpoint, until=until)

    webhook_delivery_attempt(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.next_attempt_at) == ("pending", until)
    assert [t.run_after for t in _retry_tasks(delivery)] == [until]
    # The cool-down over and the receiver answering again, the retry delivers it.
    hanging.answering.set()
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(backoff_until=timezone.now())
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    webhook_delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count) == ("delivered", 2)
    assert len(hanging.requests) == 1


@pytest.mark.django_db
def test_a_ping_to_a_backed_off_endpoint_is_sent(organizer, receiver, settings):
    """The organizer who tests is checking a fix: the ping goes out, and closes the breaker."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, _ = endpoint_for(receiver, organizer)
    _open(endpoint, until=timezone.now() + timedelta(seconds=60))

    event = webhook_endpoint_ping(endpoint=endpoint)
    webhook_delivery_attempt(delivery_id=event.deliveries.get().pk)

    assert [body["type"] for body in receiver.bodies()] == ["ping"]
    assert _breaker(endpoint) == (0, 0, None)


@pytest.mark.django_db
def test_a_batch_stops_posting_to_an_endpoint_that_has_timed_out_three_times(
    organizer, hanging, settings
):
    """An endpoint's posts beyond the task's lane wait for a place in it: once three of those
    sent have timed out, the rest are not sent."""
    slots = delivering.lanes()[1]
    endpoint, _ = endpoint_for(hanging, organizer)
    events = [d.event_id for d in _pending(endpoint, slots + 4)]
    WebhookDelivery.objects.all().delete()  # the dispatch creates them

    webhook_events_dispatch(event_ids=events)

    assert len(hanging.requests) == slots
    errors = list(WebhookAttempt.objects.values_list("error", flat=True))
    assert errors.count(BACKED_OFF) == 4
    count, seconds, until = _breaker(endpoint)
    assert (count, seconds) == (slots, 60)
    skipped = WebhookAttempt.objects.filter(error=BACKED_OFF)
    assert set(skipped.values_list("next_retry_at", flat=True)) == {until}


@pytest.mark.django_db
def test_a_dispatch_to_a_backed_off_endpoint_sends_nothing_and_reschedules(
    organizer, receiver, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint, _ = endpoint_for(receiver, organizer)
    until = timezone.now() + timedelta(seconds=60)
    _open(endpoint, until=until)
    events = [d.event_id for d in _pending(endpoint, 2)]
    WebhookDelivery.objects.all().delete()

    webhook_events_dispatch(event_ids=events)

    assert receiver.requests == []
    deliveries = WebhookDelivery.objects.all()
    assert {(d.status, d.attempt_count, d.next_attempt_at) for d in deliveries} == {
        ("pending", 1, until)
    }


# --- Attempts in flight per organizer -----------------------------------------------------


@pytest.fixture
def second_receiver():
    receiver = Receiver()
    receiver.thread.start()
    yield receiver
    receiver.answering.set()
    receiver.server.shutdown()
    receiver.server.server_close()


def _event(organizer, n: int = 1):
    with transaction.atomic():
        return webhook_event_record(
            organizer_id=organizer.id, event_id=1, type="ticket.created", data={"n": n}
        )


@pytest.mark.django_db
def test_an_organizer_with_its_lanes_taken_sends_nothing_and_comes_back_first(
    organizer, receiver, settings
):
    """Its work waited in line for a lane, then is queued again at the same priority, for a
    time: due then, it goes before every task queued since without one (newer events)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint_for(receiver, organizer)
    event = _event(organizer)
    webhook_outbox_relay()  # its dispatch, queued without a time
    before = timezone.now()

    with lanes_held_elsewhere(organizer.id) as taken:
        assert len(_run_in_queue_order()) == 1
    newer = _event(organizer, 2)
    webhook_outbox_relay()

    assert taken == delivering.lanes()[0] == 4 and receiver.requests == []
    ready = DBTaskResult.objects.filter(task_path=DISPATCH_TASK, status="READY")
    later, new = ready.order_by("enqueued_at")
    assert (later.args_kwargs["args"], new.args_kwargs["args"]) == ([[event.pk]], [[newer.pk]])
    wait = (later.run_after - before).total_seconds()
    # Its endpoint answers: waited in line half a second, then again in half a second.
    assert 2 * delivering.SLOT_WAIT_SECONDS <= wait <= 2 * delivering.SLOT_WAIT_SECONDS + 1
    assert later.priority == new.priority == 0
    assert not WebhookDelivery.objects.exists()  # made by the task that sends them
    wait_for(lambda: timezone.now() >= later.run_after, timeout=5, what="its time")
    assert _run_in_queue_order() == [later.pk, new.pk]
    assert list(receiver.ids()) == [event.pk, newer.pk]


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("answered_lately", [False, True])
def test_lanes_held_quiet_by_receivers_that_never_answered_send_lane_less_work_back_later(
    organizer, receiver, settings, monkeypatch, answered_lately
):
    """Every lane's holder has waited on its receivers for longer than LANES_HUNG_SECONDS and
    none of the organizer's endpoints answered lately (its attempts hang, none has timed out
    yet): work that finds no lane comes back about when one of them times out, not every half
    second, so an organizer whose receivers hang does not fill the queue ahead of the others'
    new work. An endpoint that answered lately keeps the half second: its lanes are busy (a
    batch on a busy machine takes seconds), not hung."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    monkeypatch.setattr(delivering, "LANES_HUNG_SECONDS", 0.3)
    endpoint, _ = endpoint_for(receiver, organizer)
    if answered_lately:
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(answered_at=timezone.now())
    _event(organizer)
    webhook_outbox_relay()
    lanes = delivering.lanes()[0]

    free = organizer_lanes_quiet_seconds(organizer_id=organizer.id, cap=lanes)
    with lanes_held_elsewhere(organizer.id):
        wait_for(
            lambda: organizer_lanes_quiet_seconds(organizer_id=organizer.id, cap=lanes) >= 0.3,
            timeout=5,
            what="the holders quiet",
        )
        before = timezone.now()
        assert len(_run_in_queue_order()) == 1

    assert free == 0.0  # no lane held
    [later] = DBTaskResult.objects.filter(task_path=DISPATCH_TASK, status="READY")
    wait = (later.run_after - before).total_seconds()
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    if answered_lately:  # half a second in line, half a second more
        assert 2 * delivering.SLOT_WAIT_SECONDS <= wait <= 2 * delivering.SLOT_WAIT_SECONDS + 1
    else:  # half a second in line, then half a timeout, jittered
        assert timeout / 4 <= wait <= timeout * 3 / 4 + 1
    assert receiver.requests == []


@pytest.mark.django_db
def test_an_answer_stamps_its_endpoint(organizer, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    answering, _ = endpoint_for(receiver, organizer)
    _event(organizer)
    before = timezone.now()
    webhook_outbox_relay()
    _run_in_queue_order()

    answering.refresh_from_db()
    assert receiver.requests and answering.answered_at >= before


def _run_in_queue_order() -> list:
    """Run the webhooks tasks due, one at a time, each picked as a worker picks it (the
    queue's order: priority, then the time it was queued for, then when); their ids."""
    ran = []
    due = DBTaskResult.objects.ready().filter(queue_name="webhooks")
    while (result := due.first()) is not None:
        result.claim("test")
        result.task.call(*result.task_result.args, **result.task_result.kwargs)
        result.set_successful(None)
        ran.append(result.pk)
    return ran


def test_a_hanging_organizer_does_not_hold_up_anothers_first_attempt(
    shared_database, organizer, other_organizer, receiver, second_receiver, workers, settings
):
    """Organizer B: 5 endpoints that accept and never answer (as long as a 30 s timeout lets
    them), 25 pings and 20 events queued. Organizer A's event, recorded while B's attempts hang,
    reaches A's receiver within the 5 s CONTRACT §13 allows (the relay's poll and a task's
    claim), and B never has more attempts in flight than its cap."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    hanging, answering = second_receiver, receiver
    hanging.answering.clear()
    b_endpoints = [endpoint_for(hanging, other_organizer)[0] for _ in range(5)]
    endpoint_for(answering, organizer)
    for endpoint in b_endpoints:
        for _ in range(5):
            webhook_endpoint_ping(endpoint=endpoint)
    for n in range(20):
        with transaction.atomic():
            webhook_event_record(
                organizer_id=other_organizer.id, event_id=1, type="ticket.created", data={"n": n}
            )
    workers.env["WEBHOOK_TIMEOUT_SECONDS"] = "30"
    workers.start()
    cap, lanes = settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER, delivering.lanes()[0]
    # Each of B's lanes holds a task, and a thread, whose attempts hang.
    wait_for(lambda: len(hanging.requests) >= lanes, timeout=30, what="B's lanes", log=workers.log)

    with transaction.atomic():
        sent = webhook_event_record(
            organizer_id=organizer.id, event_id=2, type="ticket.created", data={"n": "A"}
        )
    committed = time.monotonic()
    wait_for(lambda: answering.requests, timeout=10, what="A's first attempt", log=workers.log)
    latency = time.monotonic() - committed

    assert answering.ids() == {sent.pk: 1}
    assert latency < 5
    in_flight = len(hanging.requests)  # none of B's has been answered
    assert lanes <= in_flight <= cap  # B's others wait for its lanes
    print(f"\nA's first attempt {latency:.2f} s after its commit; B in flight: {in_flight}")

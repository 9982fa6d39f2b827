"""Real races on PostgreSQL: concurrent requests, each thread on its own database connection.

A barrier releases every thread at once; the database (row locks, the conditional counter
UPDATE, unique constraints) must let exactly the right requests through.
"""

import threading
from datetime import timedelta

import psycopg.errors
import pytest
from django.core import mail
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from checkin.models import CheckInLog, TicketCheckIn
from checkin.services import statements as admission
from tests.factories import CheckInTypeFactory, TicketFactory, TicketTypeFactory
from tests.scanner.concurrency import in_thread, wait_until_waiting_on_locks
from tests.task_support import run_due_tasks
from tickets.keys import TicketKey
from tickets.models import Order, Ticket
from tickets.services import revoking
from tickets.services.common import Actor

from .helpers import checkin_url, client_for, invalidate_url, tickets_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_at_once(count: int, request) -> list[tuple[int, dict]]:
    """Call `request(i)` in `count` threads released together; (status, body) per thread."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            response = request(i)
            results[i] = (response.status_code, response.json())
        except Exception as exc:  # reported below, with the thread's index
            results[i] = exc
        finally:
            connection.close()  # each thread opened its own connection

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    errors = [r for r in results if not isinstance(r, tuple)]
    assert not errors, errors
    return results


HOLDER = {
    "firstname": "Anan",
    "lastname": "Wong",
    "email": "anan@example.com",
    "phone": "0812345678",
}


def test_race_twenty_check_ins_of_one_ticket_admit_exactly_one(user_token, ticket):
    results = run_at_once(20, lambda i: client_for(user_token).post(checkin_url(ticket)))

    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [422] * 19
    assert {body["error"] for status, body in results if status == 422} == {"ticket_already_used"}
    assert CheckInLog.objects.filter(ticket=ticket).count() == 1
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    winner = next(body for status, body in results if status == 200)
    assert winner["ticket"]["used_at"] is not None


def test_race_twenty_creations_against_api_quota_five_create_exactly_five(user_token, event):
    ticket_type = TicketTypeFactory(event=event, quantity=100, api_quota=5)

    def create(i):
        body = {"ticket_type_id": ticket_type.id, **HOLDER, "email": f"h{i}@example.com"}
        return client_for(user_token).post(tickets_url(event), body)

    results = run_at_once(20, create)

    statuses = sorted(status for status, _ in results)
    assert statuses == [200] * 5 + [422] * 15
    assert {body["error"] for status, body in results if status == 422} == {"quota_exceeded"}
    assert Ticket.objects.filter(ticket_type=ticket_type).count() == 5
    assert Order.objects.filter(event=event).count() == 5  # losers left no order behind
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (5, 5)


def test_race_creations_against_quantity_never_oversell(user_token, event):
    ticket_type = TicketTypeFactory(event=event, quantity=3, api_quota=None)
    TicketFactory(event=event, ticket_type=ticket_type)  # sold at the box office

    def create(i):
        body = {"ticket_type_id": ticket_type.id, **HOLDER, "email": f"q{i}@example.com"}
        return client_for(user_token).post(tickets_url(event), body)

    results = run_at_once(10, create)

    assert sorted(status for status, _ in results) == [200] * 2 + [422] * 8
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 3
    assert Ticket.objects.filter(ticket_type=ticket_type).count() == 3


def test_race_hundred_creations_for_twenty_places_sell_exactly_twenty(user_token, event):
    # 50 threads (each its own database connection, under the server's limit) send 2 each.
    ticket_type = TicketTypeFactory(event=event, quantity=20, api_quota=None)

    def create(i):
        body = {"ticket_type_id": ticket_type.id, **HOLDER, "email": f"r{i}@example.com"}
        client = client_for(user_token)
        first = client.post(tickets_url(event), {**body, "external_id": f"RUSH-{i}-A"})
        second = client.post(tickets_url(event), {**body, "external_id": f"RUSH-{i}-B"})
        return _Both(first, second)

    results = [pair for _, pairs in run_at_once(50, create) for pair in pairs]

    assert sorted(status for status, _ in results) == [200] * 20 + [422] * 80
    assert {body["error"] for status, body in results if status == 422} == {"quota_exceeded"}
    assert [body["idempotent"] for status, body in results if status == 200] == [False] * 20
    sold = Ticket.objects.filter(ticket_type=ticket_type).exclude(status=Ticket.Status.REVOKED)
    assert sold.count() == 20
    assert Order.objects.filter(event=event).count() == 20  # refused ones left nothing behind
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (20, 20)


class _Both:
    """Two responses as one result of `run_at_once`: (status, body) pairs."""

    status_code = 200

    def __init__(self, *responses):
        self.responses = responses

    def json(self):
        return [(r.status_code, r.json()) for r in self.responses]


def test_race_ten_creations_with_one_external_id_make_one_ticket(user_token, event, ticket_type):
    body = {"ticket_type_id": ticket_type.id, **HOLDER, "external_id": "PARTNER-1"}
    results = run_at_once(10, lambda i: client_for(user_token).post(tickets_url(event), body))

    assert [status for status, _ in results] == [200] * 10
    ticket = Ticket.objects.get(event=event)
    assert {body["ticket"]["id"] for _, body in results} == {ticket.id}
    assert sorted(body["idempotent"] for _, body in results) == [False] + [True] * 9
    assert Order.objects.filter(event=event).count() == 1
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (1, 1)
    assert run_due_tasks() == 1  # one email task
    assert len(mail.outbox) == 1


def test_race_same_external_id_with_different_data_is_one_ticket_and_clean_409s(
    user_token, event, ticket_type
):
    def create(i):
        holder = {**HOLDER, "firstname": "Anan" if i % 2 else "Other"}
        body = {"ticket_type_id": ticket_type.id, **holder, "external_id": "PARTNER-2"}
        return client_for(user_token).post(tickets_url(event), body)

    results = run_at_once(10, create)

    ticket = Ticket.objects.get(event=event)
    for status, body in results:
        if status == 200:
            assert body["ticket"]["id"] == ticket.id
            assert body["ticket"]["firstname"] == ticket.firstname
        else:
            assert (status, body["error"]) == (409, "duplicate_external_id")
    assert sorted(s for s, _ in results) == [200] * 5 + [409] * 5
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 1


def test_race_different_types_on_one_ticket_all_succeed_and_used_at_is_earliest(
    user_token, event, ticket
):
    types = [CheckInTypeFactory(event=event, name=f"Gate {n}") for n in range(6)]
    base = timezone.now() - timedelta(hours=1)
    times = [base + timedelta(minutes=7 * ((i * 5) % 6)) for i in range(6)]  # shuffled order

    def check_in(i):
        body = {"check_in_type_ids": [types[i].id], "used_at": times[i].isoformat()}
        return client_for(user_token).post(checkin_url(ticket), body, format="json")

    results = run_at_once(6, check_in)

    assert [status for status, _ in results] == [200] * 6
    assert all(body["success"] for _, body in results)
    assert TicketCheckIn.objects.filter(ticket=ticket).count() == 6
    assert CheckInLog.objects.filter(ticket=ticket).count() == 6
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    assert ticket.used_at == min(times)


def test_race_same_type_from_many_gates_admits_once(user_token, event, ticket):
    day = CheckInTypeFactory(event=event)
    body = {"check_in_type_ids": [day.id]}
    results = run_at_once(
        10, lambda i: client_for(user_token).post(checkin_url(ticket), body, format="json")
    )
    successes = [b["check_in_results"][0]["success"] for _, b in results]
    assert [s for s, _ in results] == [200] * 10
    assert sorted(successes) == [False] * 9 + [True]
    assert TicketCheckIn.objects.filter(ticket=ticket).count() == 1
    assert CheckInLog.objects.filter(ticket=ticket).count() == 1


def test_race_check_in_against_invalidate_exactly_one_wins(user_token, ticket, ticket_type):
    def act(i):
        client = client_for(user_token)
        if i % 2:
            return client.post(checkin_url(ticket))
        return client.post(invalidate_url(ticket.event), {"ticket_id": ticket.id})

    results = run_at_once(10, act)

    assert sorted(s for s, _ in results) == [200] + [422] * 9
    ticket.refresh_from_db()
    ticket_type.refresh_from_db()
    if ticket.status == Ticket.Status.USED:
        assert ticket_type.sold_count == 1
        assert CheckInLog.objects.count() == 1
    else:
        assert ticket.status == Ticket.Status.REVOKED
        assert ticket_type.sold_count == 0  # freed exactly once
        assert CheckInLog.objects.count() == 0


def test_race_one_nfc_tag_bound_to_two_tickets_at_once(user_token, event, ticket_type):
    tickets = TicketFactory.create_batch(8, event=event, ticket_type=ticket_type)
    results = run_at_once(
        8,
        lambda i: client_for(user_token).post(checkin_url(tickets[i]), {"nfc_uid": "04SAME"}),
    )
    statuses = sorted(s for s, _ in results)
    assert statuses == [200] + [409] * 7
    for status, body in results:
        if status == 409:
            assert body["error"] == "duplicate_nfc_uid"
            assert body["ticket"]["status"] == "active"
    assert Ticket.objects.filter(nfc_uid="04SAME").count() == 1
    assert Ticket.objects.filter(status=Ticket.Status.USED).count() == 1


# --- Transient conflicts: retried once, then 503 --------------------------------------------


def _serialization_failure() -> OperationalError:
    exc = OperationalError("could not serialize access")
    exc.__cause__ = psycopg.errors.SerializationFailure("could not serialize access")
    return exc


def _invalidate(user_token, ticket):
    return client_for(user_token).post(invalidate_url(ticket.event), {"ticket_id": ticket.id})


def test_transient_conflict_is_retried_once_then_succeeds(monkeypatch, user_token, ticket):
    real_lock = revoking.ticket_lock
    calls = []

    def flaky_lock(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise _serialization_failure()
        return real_lock(**kwargs)

    monkeypatch.setattr(revoking, "ticket_lock", flaky_lock)
    response = _invalidate(user_token, ticket)
    assert response.status_code == 200
    assert len(calls) == 2
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.REVOKED


def test_transient_conflict_that_persists_is_503(monkeypatch, user_token, ticket):
    calls = []

    def failing_lock(**kwargs):
        calls.append(1)
        raise _serialization_failure()

    monkeypatch.setattr(revoking, "ticket_lock", failing_lock)
    response = _invalidate(user_token, ticket)
    assert response.status_code == 503
    assert response.json()["error"] == "service_unavailable"
    assert "Retry-After" in response.headers
    assert len(calls) == 2
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.ACTIVE


def test_a_type_admitted_while_the_statement_waits_is_reported_with_its_time(event, ticket_type):
    """The statement reads the ticket's admissions before it waits for the ticket's lock: a
    type another gate admits meanwhile is not inserted twice (the unique pair) and its result
    says when that gate admitted it."""
    entrance, vip = CheckInTypeFactory(event=event), CheckInTypeFactory(event=event)
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    other_gate_at = timezone.now() - timedelta(minutes=1)
    with transaction.atomic():
        Ticket.objects.select_for_update().get(pk=ticket.pk)  # the other gate's lock
        thread, out = in_thread(
            lambda: admission.admit(
                organizer_id=event.organizer_id,
                event_id=event.id,
                key=TicketKey.id(ticket.pk),
                actor=Actor(),
                check_in_type_ids=[entrance.id, vip.id],
            )
        )
        wait_until_waiting_on_locks(1, [thread])
        TicketCheckIn.objects.create(ticket=ticket, check_in_type=entrance, used_at=other_gate_at)
        Ticket.objects.filter(pk=ticket.pk).update(status="used", used_at=other_gate_at)
    thread.join(timeout=30)

    [result] = out
    assert [(r.check_in_type_id, r.success) for r in result.check_in_results] == [
        (entrance.id, False),
        (vip.id, True),
    ]
    assert result.check_in_results[0].used_at == other_gate_at
    assert result.check_in_results[0].error.startswith("Already checked in at")
    assert result.ticket.used_at == other_gate_at  # the earliest admission
    assert TicketCheckIn.objects.filter(ticket=ticket).count() == 2

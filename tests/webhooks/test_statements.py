"""The webhooks app's hand-written SQL (`webhooks.statements`), each statement held to the ORM
path it replaces: the event row the gate's statement inserts is the row `webhook_event_record`
saves, column for column; an organizer's slots (its lanes) are shared by every connection as
the in-process count is by the threads of one worker, and those waiting for one are served in
the order they came."""

import re
import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.factories import EventFactory, OrganizerFactory, TicketFactory
from ticketing.api.fields import datetime_representation
from tickets.models import Ticket
from tickets.services.publishing import ticket_checked_in_sql
from webhooks.models import WebhookEvent
from webhooks.services import webhook_endpoint_create, webhook_event_record
from webhooks.statements import organizer_slots

from .helpers import wait_for

pytestmark = pytest.mark.postgres


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls_allowed")
def test_the_statements_event_row_is_the_row_the_orm_saves():
    """Every column but the id: a field added to the event without a place in the statement, or
    a column the statement writes differently, fails here."""
    ticket = TicketFactory(event=EventFactory())
    webhook_endpoint_create(
        organizer_id=ticket.event.organizer_id, url="http://127.0.0.1:9/in", event_types=["*"]
    )
    organizer_id, event_id, at = ticket.event.organizer_id, ticket.event_id, timezone.now()
    params = {"organizer_id": organizer_id, "event_id": event_id, "now": at}
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH admitted AS (SELECT * FROM {Ticket._meta.db_table} WHERE id = %(ticket)s), "
            f"{ticket_checked_in_sql(admitted='admitted')} SELECT 1",
            {**params, "now_text": datetime_representation(at), "ticket": ticket.pk},
        )
    by_statement = WebhookEvent.objects.get()
    with transaction.atomic():  # the ORM path, with the statement's data and rows
        by_orm = webhook_event_record(
            organizer_id=organizer_id, event_id=event_id, type="ticket.checked_in", data=None
        )
    WebhookEvent.objects.filter(pk=by_orm.pk).update(created_at=at, source=by_statement.source)

    rows = [WebhookEvent.objects.filter(pk=e.pk).values().get() for e in (by_statement, by_orm)]
    assert rows[0].keys() == {f.attname for f in WebhookEvent._meta.concrete_fields}
    assert rows[0]["payload"]["created_at"] == timezone.localtime(at).isoformat()
    for row in rows:
        row["payload"].pop("id"), row["payload"].pop("created_at"), row.pop("id")
    assert rows[0] == rows[1]
    assert by_statement.source["ticket"]["id"] == ticket.pk
    assert by_statement.dispatched_at is None  # in the outbox
    assert re.fullmatch(r"evt_[0-9a-f]{32}", by_statement.pk)  # the ORM's form of id
    assert by_statement.payload["id"] == by_statement.pk


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls_allowed")
def test_a_statement_that_changes_several_tickets_records_an_event_of_its_own_for_each():
    event = EventFactory()
    tickets = TicketFactory.create_batch(3, event=event)
    webhook_endpoint_create(
        organizer_id=event.organizer_id, url="http://127.0.0.1:9/in", event_types=["*"]
    )
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH admitted AS (SELECT * FROM {Ticket._meta.db_table}"
            f" WHERE event_id = %(event_id)s), {ticket_checked_in_sql(admitted='admitted')}"
            " SELECT 1",
            {"organizer_id": event.organizer_id, "event_id": event.pk, "now": now}
            | {"now_text": datetime_representation(now)},
        )

    events = list(WebhookEvent.objects.all())
    assert sorted(e.source["ticket"]["id"] for e in events) == sorted(t.pk for t in tickets)
    assert len({e.pk for e in events}) == 3
    assert all(e.payload["id"] == e.pk for e in events)


def _hold(organizer_id: int, want: int, cap: int, taken: list, release: threading.Event):
    try:
        with organizer_slots(organizer_id=organizer_id, want=want, cap=cap) as n:
            taken.append(n)
            release.wait(timeout=30)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_slots_are_shared_by_connections_and_freed_with_the_block():
    organizer, other = OrganizerFactory(), OrganizerFactory()
    taken, release = [], threading.Event()
    holder = threading.Thread(target=_hold, args=(organizer.pk, 3, 4, taken, release))
    holder.start()
    wait_for(lambda: taken, timeout=10, what="three slots taken")
    try:
        with organizer_slots(organizer_id=organizer.pk, want=4, cap=4) as left:
            assert left == 1  # one of four
        with organizer_slots(organizer_id=other.pk, want=2, cap=4) as others:
            assert others == 2  # another organizer's are its own
    finally:
        release.set()
        holder.join()

    assert taken == [3]
    with organizer_slots(organizer_id=organizer.pk, want=4, cap=4) as all_of_them:
        assert all_of_them == 4
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        )
        assert cursor.fetchone()[0] == 0  # none left behind by the block


@pytest.mark.django_db(transaction=True)
def test_a_connection_closed_mid_block_frees_its_slots():
    """A worker killed while its attempts are in flight: its connection goes, and its slots."""
    organizer = OrganizerFactory()
    taken, release = [], threading.Event()

    def hold_then_lose_the_connection():
        try:
            with organizer_slots(organizer_id=organizer.pk, want=2, cap=2) as n:
                taken.append(n)
                connection.close()  # the slots' session ends
                release.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_then_lose_the_connection)
    holder.start()
    try:
        wait_for(lambda: taken, timeout=10, what="two slots taken")
        with organizer_slots(organizer_id=organizer.pk, want=2, cap=2) as free:
            assert free == 2
    finally:
        release.set()
        holder.join()


def _waiter(organizer_id: int, cap: int, seconds: float, served: list, release: threading.Event):
    """Wait for one of the organizer's slots; note (who, how many, when), hold it until told."""
    try:
        started = time.monotonic()
        with organizer_slots(organizer_id=organizer_id, want=1, cap=cap, wait_seconds=seconds) as n:
            served.append((threading.current_thread().name, n, time.monotonic() - started))
            release.wait(timeout=30)
    finally:
        connection.close()


# Advisory locks of this test's database only: a test running beside it on another database of
# the server (another worker's webhooks) takes advisory locks too.
_THIS_DATABASE = "database = (SELECT oid FROM pg_database WHERE datname = current_database())"


def _waiting_for_the_turnstile() -> int:
    """Connections waiting for an advisory lock (here: in the line's turnstile)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            f" AND {_THIS_DATABASE}"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_callers_waiting_for_a_slot_are_served_in_the_order_they_came():
    """Both slots held elsewhere (one each by two holders); a first caller waits in line
    (polling the slots), a second waits behind it (blocked on the turnstile), a third finds the
    line full (as many places as slots) and gets none at once. One slot freed, the first is
    served; the other freed, the second."""
    organizer = OrganizerFactory()
    served, release = [], threading.Event()
    holders = []
    for _ in range(2):
        held, release_held = [], threading.Event()
        holder = threading.Thread(target=_hold, args=(organizer.pk, 1, 2, held, release_held))
        holder.start()
        wait_for(lambda held=held: held, timeout=10, what="a slot taken")
        holders.append((holder, release_held))
    # The waiters' patience outlasts the steps below on a machine busy with other tests (CI once
    # saw both give up at 20 s); each returns as soon as it is served.
    first = threading.Thread(target=_waiter, args=(organizer.pk, 2, 90, served, release))
    second = threading.Thread(target=_waiter, args=(organizer.pk, 2, 90, served, release))
    try:
        first.name, second.name = "first", "second"
        first.start()
        wait_for(lambda: _locks_of_others() >= 4, timeout=10, what="the first in line")
        second.start()
        wait_for(lambda: _waiting_for_the_turnstile() == 1, timeout=10, what="the second")
        with organizer_slots(organizer_id=organizer.pk, want=1, cap=2, wait_seconds=20) as third:
            assert third == 0  # the line is full: not waited for
        holders[0][1].set()
        wait_for(lambda: served, timeout=60, what="one served")
        assert [(who, n) for who, n, _ in served] == [("first", 1)]
        holders[1][1].set()
        wait_for(lambda: len(served) == 2, timeout=60, what="the second served")
    finally:
        release.set()
        for holder, release_held in holders:
            release_held.set()
            holder.join()
        first.join(), second.join()

    assert [(who, n) for who, n, _ in served] == [("first", 1), ("second", 1)]


def _locks_of_others() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            f" AND pid <> pg_backend_pid() AND {_THIS_DATABASE}"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_callers_waiting_in_line_give_up_when_their_time_is_up():
    """The one polling and the one blocked on the turnstile both get none after their wait."""
    organizer = OrganizerFactory()
    held, release_held, served, release = [], threading.Event(), [], threading.Event()
    holder = threading.Thread(target=_hold, args=(organizer.pk, 1, 1, held, release_held))
    holder.start()
    wait_for(lambda: held, timeout=10, what="the slot taken")
    waiters = [
        threading.Thread(target=_waiter, args=(organizer.pk, 2, 0.5, served, release))
        for _ in range(2)
    ]
    try:
        with organizer_slots(organizer_id=organizer.pk, want=1, cap=2) as mine:
            assert mine == 1  # both slots held now
            for waiter in waiters:
                waiter.start()
            wait_for(lambda: len(served) == 2, timeout=10, what="both given up")
    finally:
        release_held.set(), release.set()
        for thread in (holder, *waiters):
            thread.join()

    assert [n for _, n, _ in served] == [0, 0]
    assert all(0.4 <= seconds < 3 for _, _, seconds in served)

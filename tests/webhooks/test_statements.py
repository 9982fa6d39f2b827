"""The webhooks app's hand-written SQL (`webhooks.statements`), each statement held to the ORM
path it replaces: the event row the gate's statement inserts is the row `webhook_event_record`
saves, column for column; the slots of attempts in flight are shared by every connection as the
in-process count is by the threads of one worker."""

import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.factories import EventFactory, OrganizerFactory, TicketFactory
from tickets.models import Ticket
from tickets.services.publishing import ticket_checked_in_params, ticket_checked_in_sql
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
    params = ticket_checked_in_params(organizer_id=organizer_id, event_id=event_id, at=at)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH admitted AS (SELECT * FROM {Ticket._meta.db_table} WHERE id = %(ticket)s), "
            f"{ticket_checked_in_sql(admitted='admitted')} SELECT 1",
            {**params, "ticket": ticket.pk},
        )
    by_statement = WebhookEvent.objects.get()
    with transaction.atomic():  # the ORM path, with the statement's data and rows
        by_orm = webhook_event_record(
            organizer_id=organizer_id, event_id=event_id, type="ticket.checked_in", data=None
        )
    WebhookEvent.objects.filter(pk=by_orm.pk).update(
        created_at=at, source=by_statement.source, renderer=by_statement.renderer
    )

    rows = [WebhookEvent.objects.filter(pk=e.pk).values().get() for e in (by_statement, by_orm)]
    assert rows[0].keys() == {f.attname for f in WebhookEvent._meta.concrete_fields}
    assert rows[0]["payload"]["created_at"] == timezone.localtime(at).isoformat()
    for row in rows:
        row["payload"].pop("id"), row["payload"].pop("created_at"), row.pop("id")
    assert rows[0] == rows[1]
    assert by_statement.source["ticket"]["id"] == ticket.pk
    assert by_statement.dispatched_at is None  # in the outbox


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

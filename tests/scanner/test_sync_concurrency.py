"""The sync feed never skips a change, also one committed late by a long transaction
(CONTRACT §11). PostgreSQL: real transactions on their own connections."""

import random
import threading

import pytest
from django.db import connection, transaction

from checkin.selectors_scanner import FeedPosition, event_tickets_sync, sync_cursor_load
from tests.factories import CheckInTypeFactory, TicketFactory
from tickets.models import Ticket

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WAIT = 60  # seconds a thread may wait for a condition before the test fails


class Reader:
    """A scanner following the feed, `limit` tickets a page, keeping its copy."""

    def __init__(self, event, limit: int = 3):
        self.event, self.limit = event, limit
        self.after = FeedPosition()
        self.copy: dict[int, tuple] = {}
        self.pages = 0
        self.changed = threading.Condition()

    def page(self) -> bool:
        page = event_tickets_sync(event_id=self.event.pk, after=self.after, limit=self.limit)
        for row in page.tickets:
            self.copy[row.id] = (
                row.status,
                row.order_paid,
                row.firstname,
                row.nfc_uid,
                row.checked_in_type_ids,
            )
        self.after = sync_cursor_load(event_id=self.event.pk, cursor=page.next_cursor)
        with self.changed:
            self.pages += 1
            self.changed.notify_all()
        return page.has_more

    def drain(self) -> None:
        while self.page():
            pass

    def wait_pages(self, count: int) -> None:
        with self.changed:
            target = self.pages + count
            assert self.changed.wait_for(lambda: self.pages >= target, timeout=WAIT)


def database_view(event) -> dict[int, tuple]:
    types: dict[int, list[int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.ticket_id, c.check_in_type_id FROM tickets_ticketcheckin c"
            " JOIN tickets_ticket t ON t.id = c.ticket_id WHERE t.event_id = %s"
            " ORDER BY c.check_in_type_id",
            [event.pk],
        )
        for ticket_id, type_id in cursor.fetchall():
            types.setdefault(ticket_id, []).append(type_id)
    return {
        t.id: (t.status, t.order.status == "paid", t.firstname, t.nfc_uid, types.get(t.id, []))
        for t in Ticket.objects.filter(event=event).select_related("order")
    }


def _change(cursor, rng: random.Random, ticket_id: int, type_ids: list[int]) -> None:
    """One random change of a ticket, by raw SQL as any path might."""
    kind = rng.choice(["name", "use", "unuse", "tag", "type_in", "type_out", "payment"])
    if kind == "name":
        cursor.execute(
            "UPDATE tickets_ticket SET firstname = %s WHERE id = %s",
            [f"N{rng.randrange(10**6)}", ticket_id],
        )
    elif kind == "use":
        cursor.execute(
            "UPDATE tickets_ticket SET status = 'used', used_at = now() WHERE id = %s", [ticket_id]
        )
    elif kind == "unuse":
        cursor.execute(
            "UPDATE tickets_ticket SET status = 'active', used_at = NULL WHERE id = %s",
            [ticket_id],
        )
    elif kind == "tag":
        cursor.execute(
            "UPDATE tickets_ticket SET nfc_uid = %s WHERE id = %s",
            [f"TAG{ticket_id}-{rng.randrange(1000)}", ticket_id],
        )
    elif kind == "type_in":
        cursor.execute(
            "INSERT INTO tickets_ticketcheckin (ticket_id, check_in_type_id, used_at)"
            " VALUES (%s, %s, now()) ON CONFLICT DO NOTHING",
            [ticket_id, rng.choice(type_ids)],
        )
    elif kind == "payment":  # the ticket's order paid, or back to pending: its only ticket
        cursor.execute(
            "UPDATE orders_order SET paid_at = now(),"
            " status = CASE WHEN status = 'paid' THEN 'pending' ELSE 'paid' END"
            " WHERE id = (SELECT order_id FROM tickets_ticket WHERE id = %s)",
            [ticket_id],
        )
    else:
        cursor.execute(
            "DELETE FROM tickets_ticketcheckin WHERE ticket_id = %s AND check_in_type_id = %s",
            [ticket_id, rng.choice(type_ids)],
        )


def _writer(reader: Reader, seed: int, ticket_ids: list[int], type_ids: list[int], errors):
    rng = random.Random(seed)
    try:
        for _ in range(6):
            # Locked in id order, so two writers never deadlock.
            chosen = sorted(rng.sample(ticket_ids, rng.randint(1, 3)))
            with transaction.atomic(), connection.cursor() as cursor:
                for ticket_id in chosen:
                    _change(cursor, rng, ticket_id, type_ids)
                if rng.random() < 0.35:
                    # A long transaction: it commits after the reader has read more pages,
                    # while others commit changes that took later numbers.
                    reader.wait_pages(rng.randint(1, 3))
    except Exception as exc:  # reported by the test, with the seed
        errors.append(exc)
    finally:
        connection.close()


@pytest.mark.parametrize("seed", range(12))
def test_sync_feed_reader_copy_equals_the_database_after_random_concurrent_writers(
    seed, event, ticket_type
):
    type_ids = [CheckInTypeFactory(event=event, name=f"Day {i}").pk for i in (1, 2)]
    ticket_ids = [TicketFactory(event=event, ticket_type=ticket_type).pk for _ in range(12)]
    reader = Reader(event)
    errors: list = []
    writers = [
        threading.Thread(
            target=_writer, args=(reader, seed * 100 + i, ticket_ids, type_ids, errors)
        )
        for i in range(4)
    ]
    for writer in writers:
        writer.start()
    while any(writer.is_alive() for writer in writers):
        reader.page()
    for writer in writers:
        writer.join(timeout=WAIT)
    assert errors == [], (seed, errors)

    reader.drain()

    assert reader.copy == database_view(event), seed


def test_sync_change_committed_late_by_a_transaction_that_took_an_earlier_number(
    event, ticket_type
):
    """The case positions alone would miss: A's change takes a lower number than B's but
    commits after a reader has seen B."""
    a, b = (TicketFactory(event=event, ticket_type=ticket_type) for _ in range(2))
    reader = Reader(event, limit=100)
    reader.drain()
    written, release = threading.Event(), threading.Event()

    def long_transaction():
        try:
            with transaction.atomic():
                Ticket.objects.filter(pk=a.pk).update(firstname="Late")
                written.set()
                assert release.wait(timeout=WAIT)
        finally:
            connection.close()

    thread = threading.Thread(target=long_transaction)
    thread.start()
    assert written.wait(timeout=WAIT)
    Ticket.objects.filter(pk=b.pk).update(firstname="Early")  # commits first
    reader.drain()  # reads while A is still running
    release.set()
    thread.join(timeout=WAIT)

    a_seq, b_seq = (Ticket.objects.get(pk=t.pk).change_seq for t in (a, b))
    assert a_seq < b_seq  # the hazard is real: A's number is below one already committed
    reader.drain()
    assert (reader.copy[a.pk][2], reader.copy[b.pk][2]) == ("Late", "Early")
    assert reader.copy == database_view(event)

"""The service on hosts that share nothing (deploy/topology): two app servers behind HAProxy,
PgBouncer in transaction mode, a streaming replica, Redis. Real processes; the replica's
replay paused, the replica stopped and promoted while a scanner walks the sync feed.

The tests run in order: the last promotes the replica, which is then no replica any more.
"""

import time
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from tests.factories import ApplicationFactory, EventFactory, TicketFactory, TicketTypeFactory
from tests.support import mint_token
from tickets.models import Ticket

from .stack import Stack

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

TICKETS = 30
MAX_PAGES = 200


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker):
    topology = Stack(connection.settings_dict["NAME"], settings.REDIS_URL)
    try:
        topology.up()
        yield topology
    finally:
        topology.down()


@pytest.fixture
def night(stack):
    """An event of TICKETS tickets, three gate tokens of its app, replayed on the replica, and
    every app server process reading from the replica again (a process keeps a replica it found
    lagging in the previous test's pause off its reads until its next check)."""
    application = ApplicationFactory()
    event = EventFactory(organizer=application.organizer)
    ticket_type = TicketTypeFactory(event=event, quantity=TICKETS)
    tickets = TicketFactory.create_batch(TICKETS, event=event, ticket_type=ticket_type)
    tokens = [mint_token(application=application) for _ in range(3)]
    stack.wait_replayed()
    path = f"/api/public/organizers/{event.organizer_id}/events/{event.pk}"
    wait_settled(stack, f"{path}/check_in_stats", tokens[2], "replica1")
    return path, [t.pk for t in tickets], tokens, event


class Walker:
    """A scanner following the feed through the balancer, keeping its copy."""

    def __init__(self, stack: Stack, path: str, token: str):
        self.stack, self.path, self.token = stack, path, token
        self.cursor, self.copy, self.routes = None, {}, []

    def page(self, limit: int = 7) -> bool:
        query = f"?limit={limit}" + (f"&cursor={quote(self.cursor)}" if self.cursor else "")
        reply = self.stack.call("GET", f"{self.path}/tickets/sync{query}", token=self.token)
        assert reply.status == 200, reply.body
        for ticket in reply.body["tickets"]:
            self.copy[ticket["id"]] = ticket["status"]
        self.cursor = reply.body["next_cursor"]
        self.routes.append(reply.route)
        return reply.body["has_more"]

    def drain(self) -> None:
        for _ in range(MAX_PAGES):
            if not self.page():
                return
        raise AssertionError("the feed did not end")


def check_in(stack: Stack, path: str, ticket_id: int, token: str, host=None):
    reply = stack.call(
        "POST", f"{path}/tickets/{ticket_id}/checkin", token=token, host=host, body={}
    )
    assert reply.status == 200, reply.body
    assert reply.route == "primary"
    return reply


def settled(stack: Stack, path: str, token: str, route: str) -> bool:
    """Whether enough calls in a row (more than the app server processes) read from `route`."""
    return all(stack.call("GET", path, token=token).route == route for _ in range(6))


def wait_settled(stack: Stack, path: str, token: str, route: str) -> None:
    """Until every app server process reads from `route`. The balancer need not send the calls
    of `settled` to every process, and a process may use the replica's state it asked for up to
    one check interval ago: once one process has moved, all have one interval later."""
    stack.wait_for(lambda: settled(stack, path, token, route))
    moved_at = time.monotonic()
    interval = settings.DATABASE_REPLICA_CHECK_SECONDS
    stack.wait_for(
        lambda: time.monotonic() - moved_at > interval and settled(stack, path, token, route)
    )


def database_view(event) -> dict:
    return dict(Ticket.objects.filter(event=event).values_list("id", "status"))


def test_a_scan_then_a_read_on_the_other_host_sees_it_and_lag_past_the_bound_is_skipped(
    stack, night
):
    path, ids, (gate, door, _), _ = night
    first, second = stack.hosts
    stack.pause()
    try:
        check_in(stack, path, ids[0], gate, host=first)
        # The gate wrote: its reads on the other host come from the primary, with its scan.
        mine = stack.call("GET", f"{path}/check_in_stats", token=gate, host=second)
        assert (mine.status, mine.route) == (200, "primary")
        assert mine.body["tickets"]["used"] == 1
        # Another caller may read the paused replica's snapshot while it is within the bound...
        theirs = stack.call("GET", f"{path}/check_in_stats", token=door, host=second)
        if theirs.route == "replica1":
            assert theirs.body["tickets"]["used"] == 0
        # ...and no longer once its replay lags past DATABASE_REPLICA_MAX_LAG_SECONDS.
        # (each app server process checks the replica at most every second: wait for all)
        wait_settled(stack, f"{path}/check_in_stats", door, "primary")
        reply = stack.call("GET", f"{path}/check_in_stats", token=door)
        assert (reply.route, reply.body["tickets"]["used"]) == ("primary", 1)
    finally:
        stack.resume()
    wait_settled(stack, f"{path}/check_in_stats", door, "replica1")


def test_sync_walk_with_replay_paused_never_omits_a_change(stack, night):
    path, ids, (gate, scanner, other_device), event = night
    walker = Walker(stack, path, scanner)
    walker.page()
    walker.page()
    stack.pause()
    try:
        for ticket_id in ids[:5]:
            check_in(stack, path, ticket_id, gate)
        walker.drain()
        # A device that wrote reads from the primary, and gets a cursor past the replica's
        # replay; another device continuing from that cursor must not be served by the replica.
        check_in(stack, path, ids[5], other_device)
        handed_over = Walker(stack, path, other_device)
        handed_over.drain()
        assert handed_over.routes[-1] == "primary"
        walker.token, walker.cursor = scanner, handed_over.cursor
        walker.copy.update(handed_over.copy)
        walker.page()
        assert walker.routes[-1] == "primary"
        check_in(stack, path, ids[6], gate)
        walker.drain()
    finally:
        stack.resume()
    stack.wait_replayed()
    walker.drain()
    assert "replica1" in walker.routes
    assert walker.copy == database_view(event)


def test_sync_walk_with_the_replica_stopped_answers_from_the_primary(stack, night):
    path, ids, (gate, scanner, _), event = night
    walker = Walker(stack, path, scanner)
    walker.page()
    assert walker.routes == ["replica1"]
    stack.pg_ctl("-m", "immediate", "-w", "stop")
    try:
        check_in(stack, path, ids[1], gate)
        walker.drain()  # every page a 200
        assert set(walker.routes[1:]) == {"primary"}
        assert walker.copy == database_view(event)
    finally:
        stack.pg_ctl("-w", "start")
    check_in(stack, path, ids[2], gate)
    stack.wait_replayed()
    stack.wait_for(lambda: (walker.page(), walker.routes[-1])[1] == "replica1")
    walker.drain()
    assert walker.copy == database_view(event)


def test_sync_walk_with_the_replica_promoted_moves_to_the_primary(stack, night):
    path, ids, (gate, scanner, _), event = night
    walker = Walker(stack, path, scanner)
    walker.page()
    stack.pg_ctl("-w", "promote")
    for ticket_id in ids[10:14]:
        check_in(stack, path, ticket_id, gate)
    # A promoted standby no longer follows the primary: at most one check interval later,
    # nothing reads from it.
    wait_settled(stack, f"{path}/check_in_stats", scanner, "primary")
    check_in(stack, path, ids[20], gate)
    walker.drain()
    assert walker.routes[-1] == "primary"
    assert walker.copy == database_view(event)

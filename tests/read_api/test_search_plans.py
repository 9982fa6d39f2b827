"""The search paths use indexes on PostgreSQL (issue 14): the statements the views really send,
EXPLAINed over enough rows, with fresh statistics, that the planner's choice means something.

Each test makes a real request, takes the statement it sent for tickets (or events) from the
query log, and EXPLAINs it: the plan must read an index of ours and no `Seq Scan` of the table.

A page of a contains-search is sorted by an expression (`id + 0`: `ticketing.api.filtering.
order_queryset`, the ticket admin's `get_ordering`): sorted by the bare key, the planner walked
the primary key hoping to meet matches early, and read the whole table when they were rare.
"""

import re

import pytest
from django.contrib.admin.sites import site
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from events.models import Event
from tests.factories import (
    EventFactory,
    MembershipFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support import TokenClient, mint_token
from tickets.models import Ticket

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROWS = 80_000  # in each of two events: past the size where reading the event costs more
EVENTS = 40_000  # of the organizer
RARE_NAME = "Zephyrine"


def _clone(model, template_id: int, count: int, **expressions: str) -> None:
    """`count` copies of one row in a single statement, each column either copied or computed
    from `g` (1..count): a realistic table in a second, where the ORM would take a minute."""
    table = model._meta.db_table
    columns = [f.column for f in model._meta.concrete_fields if not f.primary_key]
    expressions.setdefault("page_token", "md5(random()::text || g::text)")  # unique per row
    values = [expressions.get(c, c) for c in columns]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} "
            f"FROM {table}, generate_series(1, %s) AS g WHERE id = %s",
            [count, template_id],
        )


@pytest.fixture
def crowd(organizer, event, ticket_type):
    """`ROWS` tickets in `event` and in another; one ticket of `event` has a rare name
    and email; `EVENTS` events of the organizer, one with the rare name in its title."""
    other = EventFactory(organizer=organizer, title="Other night")
    other_ticket = TicketFactory(event=other, ticket_type=TicketTypeFactory(event=other))
    _clone(
        Ticket, other_ticket.pk, ROWS, reference_code="'B' || g", email="'b' || g || '@x.example'"
    )
    target = TicketFactory(
        event=event, ticket_type=ticket_type, lastname=RARE_NAME, email="zephyrine@rare.example"
    )
    _clone(
        Ticket,
        target.pk,
        ROWS,
        reference_code="'A' || lpad(g::text, 7, '0')",
        firstname="'Holder'",
        lastname="'Number ' || g",
        email="'holder' || g || '@bench.example'",
    )
    _clone(Event, other.pk, EVENTS, title="'Concert ' || g", location_name="'Hall ' || g")
    EventFactory(organizer=organizer, title=f"{RARE_NAME} live", location_name="Arena")
    _analyze()
    return target


def _analyze():
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE tickets_ticket")
        cursor.execute("ANALYZE events_event")
        cursor.execute("ANALYZE orders_order")
        cursor.execute("ANALYZE organizers_membership")


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def _statements(client, url, *, table: str, **params) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200, response.content
    reads = re.compile(rf'FROM "?{table}"?\s')  # the ORM quotes names; plain statements do not
    return [q["sql"] for q in captured.captured_queries if reads.search(q["sql"])]


def _assert_indexed(sql: str, *, index: str, table: str = "tickets_ticket") -> str:
    plan = _plan(sql)
    assert not re.search(rf"Seq Scan on {table}\s", plan), plan
    assert index in plan, plan
    return plan


def _page_and_count(statements: list[str]) -> list[str]:
    """The list's page, then its `total` (asked with `per_page=1`, so that the page is full
    and the total needs its count)."""
    assert len(statements) == 2, statements
    assert " LIMIT " in statements[0], statements
    assert statements[1].startswith("SELECT COUNT(*)"), statements
    return statements


def test_free_text_q_on_event_tickets_uses_the_joined_trigram_index(app_client, tickets_url, crowd):
    """One LIKE over the four columns joined, answered by one index (tickets 0007), whose
    expression must be exactly what Django compiles."""
    statements = _statements(
        app_client, tickets_url, table="tickets_ticket", q=RARE_NAME.lower(), per_page=1
    )
    for sql in _page_and_count(statements):
        assert sql.count(" LIKE ") == 1, sql
        _assert_indexed(sql, index="ticket_search_trgm_idx")


def test_a_search_page_in_another_order_uses_the_trigram_indexes(app_client, tickets_url, crowd):
    statements = _statements(
        app_client,
        tickets_url,
        table="tickets_ticket",
        q=RARE_NAME,
        order_by="updated_at",
        per_page=1,
    )
    page, _ = _page_and_count(statements)
    _assert_indexed(page, index="ticket_search_trgm_idx")


def test_email_filter_uses_the_joined_trigram_index(app_client, tickets_url, crowd):
    """The email is part of the joined text: its index finds the candidates, the email's own
    condition rechecks them (no index of the column alone for a check-in to write)."""
    statements = _statements(
        app_client, tickets_url, table="tickets_ticket", email="RARE.EXAMPLE", per_page=1
    )
    for sql in _page_and_count(statements):
        _assert_indexed(sql, index="ticket_search_trgm_idx")
    response = app_client.get(tickets_url, {"email": "RARE.EXAMPLE"})
    assert [t["id"] for t in response.json()["tickets"]] == [crowd.pk]
    # A last name holds this text (in the joined text too), but no email does.
    response = app_client.get(tickets_url, {"email": "Number 1234"})
    assert response.json()["tickets"] == []


def test_free_text_q_on_events_uses_the_trigram_indexes(app_client, events_url, crowd):
    statements = _statements(app_client, events_url, table="events_event", q=RARE_NAME, per_page=1)
    for sql in _page_and_count(statements):
        plan = _assert_indexed(sql, index="event_title_trgm_idx", table="events_event")
        assert "event_location_name_trgm_idx" in plan, plan


def test_admin_ticket_search_uses_the_trigram_indexes(crowd):
    admin = site._registry[Ticket]
    superuser = UserFactory(is_superuser=True, is_staff=True)
    tagged = TicketFactory(event=crowd.event, ticket_type=crowd.ticket_type, nfc_uid="04A1B2C3")
    # Tags on many tickets, as where every wristband has one (with few, reading them all is
    # the better plan).
    _clone(Ticket, tagged.pk, ROWS // 4, reference_code="'T' || g", nfc_uid="'TAG' || g")
    _analyze()
    for term, index, expected in (
        ("zephyr", "ticket_search_trgm_idx", crowd),
        (crowd.reference_code.lower(), "ticket_search_trgm_idx", crowd),
        ("04a1b2c3", "ticket_nfc_uid_upper_idx", tagged),
    ):
        request = RequestFactory().get("/admin/tickets/ticket/", {"q": term})
        request.user = superuser
        changelist = admin.get_changelist_instance(request)
        assert [t.pk for t in changelist.result_list] == [expected.pk]
        page = changelist.queryset[: admin.list_per_page]
        sql, params = page.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert not re.search(r"Seq Scan on tickets_ticket\s", plan), plan
        assert index in plan, plan


def test_event_scoped_search_by_code_uses_the_unique_index(app_client, tickets_url, crowd):
    url = f"{tickets_url}/search"
    statements = _statements(
        app_client, url, table="tickets_ticket", reference_code=crowd.reference_code
    )
    _assert_indexed(statements[0], index="ticket_unique_reference_code")


def _global_search(client, crowd) -> str:
    statements = _statements(
        client,
        "/api/public/tickets/search",
        table="tickets_ticket",
        event_id=crowd.event_id,
        reference_code=crowd.reference_code,
    )
    assert len(statements) == 1
    return statements[0]


def test_global_search_by_a_member_uses_the_unique_index(organizer_client, crowd):
    _assert_indexed(_global_search(organizer_client, crowd), index="ticket_unique_reference_code")


def test_global_search_by_an_application_uses_the_unique_index(app_client, crowd):
    _assert_indexed(_global_search(app_client, crowd), index="ticket_unique_reference_code")


def test_global_search_of_own_tickets_finds_the_ticket_first(application, crowd):
    """A holder (user token, scope `public`) finds their own ticket through the unique index,
    then its ownership is checked on that one row: no pass over every ticket they might own."""
    holder = UserFactory(email="Zephyrine@Rare.Example")
    for _n in range(50):  # orders of their own elsewhere, as a regular buyer has
        OrderFactory(event=crowd.event, buyer=holder)
    _analyze()
    client = TokenClient(mint_token(application=application, user=holder, scope="public"))
    plan = _assert_indexed(_global_search(client, crowd), index="ticket_unique_reference_code")
    # The ticket table is read once, by that index.
    assert len(re.findall(r" on tickets_ticket\s", plan)) == 1, plan
    # And the ownership rule still decides: another user's token does not see it.
    stranger = UserFactory(email="someone@else.example")
    other = TokenClient(mint_token(application=application, user=stranger, scope="public"))
    response = other.get(
        "/api/public/tickets/search",
        {"event_id": crowd.event_id, "reference_code": crowd.reference_code},
    )
    assert response.status_code == 404


def test_member_of_another_organizer_does_not_see_the_ticket(application, other_organizer, crowd):
    outsider = UserFactory()
    MembershipFactory(user=outsider, organizer=other_organizer, role="admin")
    client = TokenClient(
        mint_token(application=application, user=outsider, scope="public organizer")
    )
    response = client.get(
        "/api/public/tickets/search",
        {"event_id": crowd.event_id, "reference_code": crowd.reference_code},
    )
    assert response.status_code == 404


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_a_search_is_never_prepared_so_it_is_planned_for_its_pattern(
    app_client, tickets_url, events_url, event, ticket_type
):
    """A prepared statement's generic plan cannot see a LIKE pattern (see
    `ticketing.db.planned_for_their_values`); the other lists stay prepared."""
    TicketFactory(event=event, ticket_type=ticket_type, lastname=RARE_NAME)
    for _ in range(6):  # well past the settings' prepare threshold (2)
        assert app_client.get(tickets_url, {"q": RARE_NAME.lower()}).json()["total"] == 1
        assert app_client.get(events_url, {"q": "zzz-nothing"}).json()["total"] == 0
        assert app_client.get(tickets_url, {"status": "active"}).json()["total"] == 1

    prepared = _prepared_statements()
    assert any('FROM "tickets_ticket"' in sql for sql in prepared)  # the plain list
    assert not [sql for sql in prepared if "LIKE" in sql]


@pytest.mark.parametrize(
    "index", ["ticket_search_trgm_idx", "event_title_trgm_idx", "event_location_name_trgm_idx"]
)
def test_the_search_indexes_keep_a_short_pending_list(index):
    """Check-ins add every ticket's trigrams to the index anew, an import adds thousands of
    events': a short pending list keeps what each search reads through small, and the planner
    choosing the index (tickets 0008, events 0003)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [index])
        assert cursor.fetchone()[0] == ["gin_pending_list_limit=256"]

"""`ticketing.db`'s plain statements load the same instances as the ORM, on SQLite and
PostgreSQL alike, and `CompiledOnce` refuses the queries it cannot bind by position."""

import pytest
from django.db import connection
from django.db.models import Exists, OuterRef
from django.db.models.functions import Upper

from events.models import Event
from tests.factories import EventFactory, TicketFactory
from ticketing.db import CompiledOnce, from_row, select_list
from tickets.models import Ticket, TicketFormAnswer

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_from_row_builds_what_the_orm_builds(organizer):
    event = EventFactory(organizer=organizer, description="Night\nmarket")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Event, 'e')} FROM {Event._meta.db_table} AS e WHERE e.id = %s",
            [event.pk],
        )
        loaded = from_row(Event, cursor.fetchone())
    expected = Event.objects.get(pk=event.pk)
    assert _fields(loaded) == _fields(expected)
    assert loaded.start_at == expected.start_at and loaded.start_at.tzinfo is not None
    assert loaded._state.adding is False and loaded._state.db == "default"


def _ticket_by_code(*, event_id, reference_code, organizer_id, with_answers):
    queryset = Ticket.objects.filter(event_id=event_id, reference_code=reference_code)
    if organizer_id is not None:
        queryset = queryset.filter(event__organizer_id=organizer_id)
    if with_answers:
        answers = TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk"))
        queryset = queryset.annotate(has_answers=Exists(answers))
    return queryset.select_related("ticket_type")


def test_compiled_once_returns_what_the_orm_returns_for_each_shape(event, organizer):
    tickets = [TicketFactory(event=event, reference_code=f"CODE{n:04d}") for n in range(3)]
    find = CompiledOnce(_ticket_by_code)
    for ticket in tickets:  # the second and third bind new values to the first's SQL
        for organizer_id in (organizer.pk, None):
            for with_answers in (True, False):
                values = {
                    "event_id": event.pk,
                    "reference_code": ticket.reference_code,
                    "organizer_id": organizer_id,
                }
                found = find(shape={"with_answers": with_answers}, **values)
                orm = list(_ticket_by_code(with_answers=with_answers, **values))
                assert [_fields(t) for t in found] == [_fields(t) for t in orm] != []
                assert _fields(found[0].ticket_type) == _fields(orm[0].ticket_type)
                assert getattr(found[0], "has_answers", None) is getattr(
                    orm[0], "has_answers", None
                )
    assert len(find._compiled) == 4  # one statement per shape, whatever the values
    other = find(
        event_id=event.pk, reference_code="NOSUCH", organizer_id=None, shape={"with_answers": False}
    )
    assert other == []


def test_compiled_once_refuses_a_value_the_statement_changes(event):
    contains = CompiledOnce(lambda *, code: Ticket.objects.filter(reference_code__contains=code))
    with pytest.raises(ValueError, match="changed"):
        contains(code="AB")


def test_compiled_once_refuses_a_value_that_never_reaches_the_statement(event):
    ignored = CompiledOnce(lambda *, code: Ticket.objects.annotate(up=Upper("reference_code")))
    with pytest.raises(ValueError, match="do not reach"):
        ignored(code="AB")


def test_compiled_once_binds_only_ints_and_strings(event):
    flagged = CompiledOnce(lambda *, used: Ticket.objects.filter(used_at__isnull=used))
    with pytest.raises(TypeError, match="shape the rest"):
        flagged(used=True)


def _page_of_tickets(*, offset, per_page):
    tickets = Ticket.objects.order_by("id")
    return tickets.filter(pk__in=tickets.values("pk")[offset : offset + per_page])


def test_compiled_once_binds_a_slice_start_written_as_a_literal(event):
    """The ORM writes OFFSET into the SQL; bound instead, every page shares one statement."""
    tickets = [TicketFactory(event=event) for _ in range(5)]
    page = CompiledOnce(_page_of_tickets)
    for offset in (0, 1, 3, 5):
        found = page(offset=offset, shape={"per_page": 2})
        expected = list(_page_of_tickets(offset=offset, per_page=2))
        assert [t.pk for t in found] == [t.pk for t in expected]
        assert [t.pk for t in found] == [t.pk for t in tickets[offset : offset + 2]]
    assert len(page._compiled) == 1


def test_compiled_once_refuses_a_literal_written_twice(event):
    def twice(*, offset):
        first = Ticket.objects.values("pk")[offset : offset + 1]
        return Ticket.objects.filter(pk__in=first).exclude(pk__in=first)

    with pytest.raises(ValueError, match="more than once"):
        CompiledOnce(twice)(offset=1)

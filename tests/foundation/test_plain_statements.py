"""The plain statements on our own tables load the same instances as the ORM, on SQLite and
PostgreSQL alike: `ticketing.db.from_row`, which every statement's rows go through. Each
statement beside the ORM query it replaces: tests/statements (`tickets_cases`)."""

import pytest
from django.db import connection
from django.utils import timezone

from events.models import Event
from tests.factories import (
    EventFactory,
    TicketFactory,
)
from ticketing.db import from_row, select_list
from tickets.models import Ticket

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


def test_from_row_converts_every_ticket_field_as_the_orm_does(event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, nfc_uid="04A1B2")
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.USED, used_at=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Ticket, 't')} FROM {Ticket._meta.db_table} AS t WHERE t.id = %s",
            [ticket.pk],
        )
        loaded = from_row(Ticket, cursor.fetchone())
    expected = Ticket.objects.get(pk=ticket.pk)
    assert _fields(loaded) == _fields(expected)
    for name, value in _fields(expected).items():
        assert type(getattr(loaded, name)) is type(value), name

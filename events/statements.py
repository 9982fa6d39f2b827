"""The SQL this app writes by hand, each statement beside the ORM query it replaces and pinned
to it by the twin test (`ticketing.twins`, tests/statements/events_cases.py).

- `event_of_organizer`: the tenant check every event-scoped call makes (the organizer's event,
  none for another organizer's). The ORM's compilation of the same query costs more than its
  round trip.
"""

from __future__ import annotations

import functools

from django.db import connections

from ticketing.db import from_row, select_list
from ticketing.twins import fetch_dict, replaces

from .models import Event


def event_of_organizer_orm(*, organizer_id: int, event_id: int, using: str) -> Event | None:
    """`event_of_organizer` by the ORM: what the statement replaces."""
    return Event.objects.using(using).filter(pk=event_id, organizer_id=organizer_id).first()


@replaces(event_of_organizer_orm)
def event_of_organizer(*, organizer_id: int, event_id: int, using: str) -> Event | None:
    """The event `event_id` read from the database `using` if it is the organizer's, else None."""
    with connections[using].cursor() as cursor:
        cursor.execute(_event_of_organizer_sql(), [event_id, organizer_id])
        row = fetch_dict(cursor)
    if row is None:
        return None
    return from_row(Event, [row[f.column] for f in Event._meta.concrete_fields], using=using)


@functools.cache
def _event_of_organizer_sql() -> str:
    return (
        f"SELECT {select_list(Event, 'e')} FROM {Event._meta.db_table} AS e"
        " WHERE e.id = %s AND e.organizer_id = %s"
    )

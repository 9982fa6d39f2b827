"""Reads of organizers, scoped to what a caller may act for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import CharField, F, QuerySet, Value

from ticketing.api.fields import INT32_MAX
from ticketing.db import from_row, select_list

from .models import Membership, Organizer

if TYPE_CHECKING:
    from .permissions import OrganizerReach


def organizers_in_reach(*, reach: OrganizerReach) -> QuerySet[Organizer]:
    """The organizers a token may act for (`organizers.permissions.organizer_reach`), each
    annotated with `role` (CONTRACT §5): the user's role, or null for an application token.
    """
    if reach.none:
        return Organizer.objects.none()
    queryset = Organizer.objects.all()
    if reach.organizer_id is not None:
        queryset = queryset.filter(pk=reach.organizer_id)
    if reach.member_user_id is None:
        return queryset.annotate(role=Value(None, output_field=CharField()))
    # A join on the unique (user, organizer) membership, not a correlated subquery: the page
    # and its `total` then read the user's memberships through their index, once.
    return queryset.filter(memberships__user_id=reach.member_user_id).annotate(
        role=F("memberships__role")
    )


def organizers_page(*, reach: OrganizerReach, offset: int, limit: int) -> list[Organizer]:
    """A page of `organizers_in_reach` in its default order (by id), as one plain statement:
    `GET /organizers` without parameters, every client's first call, would otherwise spend more
    on the ORM's compilation than on its round trip. Held to the ORM's query by
    tests/read_api/test_organizer_statements.py."""
    if reach.none:
        return []
    join, where, params = _reach_sql(reach)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Organizer, 'o')}, {'m.role' if join else 'NULL'}"
            f" FROM {Organizer._meta.db_table} AS o {join} WHERE {where}"
            " ORDER BY o.id LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        rows = cursor.fetchall()
    organizers = []
    for row in rows:
        organizer = from_row(Organizer, row, using=connection.alias)
        organizer.role = row[-1]
        organizers.append(organizer)
    return organizers


def organizers_count(*, reach: OrganizerReach) -> int:
    """How many `organizers_in_reach` are, as one plain statement (`organizers_page`)."""
    if reach.none:
        return 0
    join, where, params = _reach_sql(reach)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {Organizer._meta.db_table} AS o {join} WHERE {where}", params
        )
        return cursor.fetchone()[0]


def _reach_sql(reach: OrganizerReach) -> tuple[str, str, list]:
    """The JOIN (the user's memberships), WHERE and parameters of `organizers_in_reach`."""
    join, where, params = "", "TRUE", []
    if reach.member_user_id is not None:
        join = f"JOIN {Membership._meta.db_table} AS m ON m.organizer_id = o.id AND m.user_id = %s"
        params.append(reach.member_user_id)
    if reach.organizer_id is not None:
        where = "o.id = %s"
        params.append(reach.organizer_id)
    return join, where, params


@dataclass(frozen=True)
class OrganizerAccess:
    organizer_id: int
    role: str | None  # the user's membership role; None: not a member, or no user asked


def organizer_access(*, organizer_id: int | None, user_id: int | None) -> OrganizerAccess | None:
    """The organizer of an API path with the caller's role in it; None if it does not exist.

    Every organizer-scoped API call asks this before anything else, so it is one plain
    statement: the ORM's compilation of the same query costs five times its round trip.
    """
    if not isinstance(organizer_id, int) or not 1 <= organizer_id <= INT32_MAX:
        return None  # no such id (and SQLite cannot even bind some)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT o.id, m.role
            FROM {Organizer._meta.db_table} AS o
            LEFT JOIN {Membership._meta.db_table} AS m
                ON m.organizer_id = o.id AND m.user_id = %s
            WHERE o.id = %s
            """,
            [user_id, organizer_id],
        )
        row = cursor.fetchone()
    return OrganizerAccess(organizer_id=row[0], role=row[1]) if row else None

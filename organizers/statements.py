"""The SQL this app writes by hand, each statement beside the ORM query it replaces and pinned
to it by the twin test (`ticketing.twins`, tests/statements/organizers_cases.py).

- `organizer_access`: the tenant check every organizer-scoped API call makes first (the path's
  organizer and the caller's role in it). The ORM's compilation of the same query costs five
  times its round trip.
- `organizers_page`, `organizers_count`: `GET /organizers` without parameters, every client's
  first call, which would otherwise spend more on the ORM's compilation than on its round trip.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import OuterRef, Subquery

from ticketing.api.filtering import DEFAULT_ORDER_BY, order_queryset
from ticketing.db import from_row, select_list
from ticketing.twins import fetch_dict, fetch_dicts, replaces

from .models import Membership, Organizer
from .reach import OrganizerReach, organizers_in_reach


def organizer_access_orm(*, organizer_id: int, user_id: int | None) -> dict[str, Any] | None:
    """`organizer_access` by the ORM: what the statement replaces."""
    role = Membership.objects.filter(organizer_id=OuterRef("pk"), user_id=user_id)
    return (
        Organizer.objects.filter(pk=organizer_id)
        .annotate(role=Subquery(role.values("role")[:1]))
        .values("id", "role")
        .first()
    )


@replaces(organizer_access_orm)
def organizer_access(*, organizer_id: int, user_id: int | None) -> dict[str, Any] | None:
    """`{"id", "role"}` of the organizer `organizer_id` with the role of the user `user_id` in
    it (None: not a member, or no user asked); None if there is no such organizer."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT o.id AS id, m.role AS role
            FROM {Organizer._meta.db_table} AS o
            LEFT JOIN {Membership._meta.db_table} AS m
                ON m.organizer_id = o.id AND m.user_id = %s
            WHERE o.id = %s
            """,
            [user_id, organizer_id],
        )
        return fetch_dict(cursor)


def organizers_page_orm(*, reach: OrganizerReach, offset: int, limit: int) -> list[Organizer]:
    """`organizers_page` by the ORM: what the statement replaces, the list's query in its
    default order."""
    queryset = organizers_in_reach(reach=reach)
    return list(
        order_queryset(queryset, order_by=DEFAULT_ORDER_BY, descending=False)[
            offset : offset + limit
        ]
    )


@replaces(organizers_page_orm)
def organizers_page(*, reach: OrganizerReach, offset: int, limit: int) -> list[Organizer]:
    """A page of the organizers in `reach` by id, each with `role`."""
    if reach.none:
        return []
    join, where, params = _reach_sql(reach)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Organizer, 'o')}, {'m.role' if join else 'NULL'} AS role"
            f" FROM {Organizer._meta.db_table} AS o {join} WHERE {where}"
            " ORDER BY o.id LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        rows = fetch_dicts(cursor)
    fields = Organizer._meta.concrete_fields
    organizers = []
    for row in rows:
        organizer = from_row(Organizer, [row[f.column] for f in fields], using=connection.alias)
        organizer.role = row["role"]
        organizers.append(organizer)
    return organizers


def organizers_count_orm(*, reach: OrganizerReach) -> int:
    """`organizers_count` by the ORM: what the statement replaces."""
    return organizers_in_reach(reach=reach).count()


@replaces(organizers_count_orm)
def organizers_count(*, reach: OrganizerReach) -> int:
    """How many organizers are in `reach`."""
    if reach.none:
        return 0
    join, where, params = _reach_sql(reach)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) AS n FROM {Organizer._meta.db_table} AS o {join} WHERE {where}",
            params,
        )
        return fetch_dict(cursor)["n"]


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

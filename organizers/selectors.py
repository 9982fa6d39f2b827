"""Reads of organizers, scoped to what a caller may act for."""

from dataclasses import dataclass

from django.db import connection
from django.db.models import CharField, OuterRef, QuerySet, Subquery, Value

from ticketing.api.caller import Caller

from .models import Membership, Organizer


def organizers_for_caller(*, caller: Caller) -> QuerySet[Organizer]:
    """The organizers the caller may act for, each annotated with `role` (CONTRACT §5).

    A user token: the user's memberships with their role; through an organizer's application
    only that organizer (any other would be `organizer_mismatch`), through a platform
    application all of them. An application token: its owner, `role` null; a platform
    application acts for no organizer by itself, so none.
    """
    application = caller.application
    if caller.is_user_token:
        role = Membership.objects.filter(organizer=OuterRef("pk"), user=caller.user).values("role")[
            :1
        ]
        queryset = Organizer.objects.annotate(role=Subquery(role)).filter(role__isnull=False)
        if application.organizer_id is not None:
            queryset = queryset.filter(pk=application.organizer_id)
        return queryset
    if application.organizer_id is None:
        return Organizer.objects.none()
    return Organizer.objects.filter(pk=application.organizer_id).annotate(
        role=Value(None, output_field=CharField())
    )


_ID_MAX = 2**31 - 1  # ids are 32-bit serials


@dataclass(frozen=True)
class OrganizerAccess:
    organizer_id: int
    role: str | None  # the user's membership role; None: not a member, or no user asked


def organizer_access(*, organizer_id: int | None, user_id: int | None) -> OrganizerAccess | None:
    """The organizer of an API path with the caller's role in it; None if it does not exist.

    Every organizer-scoped API call asks this before anything else, so it is one plain
    statement: the ORM's compilation of the same query costs five times its round trip.
    """
    if not isinstance(organizer_id, int) or not 1 <= organizer_id <= _ID_MAX:
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

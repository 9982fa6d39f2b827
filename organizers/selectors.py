"""Reads of organizers, scoped to what a caller may act for."""

from __future__ import annotations

from dataclasses import dataclass

from ticketing.api.fields import INT32_MAX

from . import statements
from .models import Organizer
from .reach import OrganizerReach


def organizers_page(*, reach: OrganizerReach, offset: int, limit: int) -> list[Organizer]:
    """A page of `reach.organizers_in_reach` in its default order (by id), as one plain statement
    (`statements.organizers_page`)."""
    return statements.organizers_page(reach=reach, offset=offset, limit=limit)


def organizers_count(*, reach: OrganizerReach) -> int:
    """How many `reach.organizers_in_reach` are, as one plain statement."""
    return statements.organizers_count(reach=reach)


@dataclass(frozen=True)
class OrganizerAccess:
    organizer_id: int
    role: str | None  # the user's membership role; None: not a member, or no user asked


def organizer_access(*, organizer_id: int | None, user_id: int | None) -> OrganizerAccess | None:
    """The organizer of an API path with the caller's role in it; None if it does not exist.

    Every organizer-scoped API call asks this before anything else: one plain statement
    (`statements.organizer_access`).
    """
    if not isinstance(organizer_id, int) or not 1 <= organizer_id <= INT32_MAX:
        return None  # no such id (and SQLite cannot even bind some)
    row = statements.organizer_access(organizer_id=organizer_id, user_id=user_id)
    return OrganizerAccess(organizer_id=row["id"], role=row["role"]) if row else None

"""What a token may reach among organizers, before any organizer path is asked: the value
(`OrganizerReach`, which the rule `permissions.organizer_reach` makes of a caller) and the
organizers it lets through (`organizers_in_reach`).

Below the permissions, the selectors and the statements, which all read it: `GET /organizers`
lists what it lets through (the ORM query here; `statements` replicates it in plain SQL), the
permissions check a path's organizer against it, `GET /tickets/search` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import CharField, F, QuerySet, Value

from .models import Organizer


@dataclass(frozen=True)
class OrganizerReach:
    """The organizers a token may act for, before asking its user's memberships.

    `none`: no organizer at all. `organizer_id`: only that one (the owner of the token's
    application); None: any. `member_user_id`: only those this user is a member of (a user
    token); None: no membership asked (an application token acts as its organizer).
    """

    none: bool = False
    organizer_id: int | None = None
    member_user_id: int | None = None


def organizers_in_reach(*, reach: OrganizerReach) -> QuerySet[Organizer]:
    """The organizers a token may act for, each annotated with `role` (CONTRACT §5): the
    user's role, or null for an application token.
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

"""Cases for `organizers.statements`: the tenant check for every kind of caller it is asked
about, and the organizer list for every reach a token can have."""

from organizers.models import Membership
from organizers.reach import OrganizerReach
from tests.factories import MembershipFactory, OrganizerFactory, UserFactory
from ticketing.api.fields import INT32_MAX

from .support import Case


def _access_cases() -> list[Case]:
    """One organizer with a member in each role; a user who is a member of another organizer
    only; a user who is a member of none."""
    organizer, other = OrganizerFactory(), OrganizerFactory()
    members = {
        role: MembershipFactory(organizer=organizer, role=role).user_id
        for role in Membership.Role.values
    }
    elsewhere = MembershipFactory(organizer=other).user_id
    nobody = UserFactory().pk
    missing = other.pk + 1000
    callers = {
        **{f"member ({role})": user_id for role, user_id in members.items()},
        "member of another organizer": elsewhere,
        "member of no organizer": nobody,
        "no user (an application token, a platform application's too)": None,
        "a user id that does not exist": nobody + 1000,
    }
    asked = {
        "the organizer": organizer.pk,
        "another organizer": other.pk,
        "no such organizer": missing,
        "id 0": 0,
        "past int32": INT32_MAX + 1,
    }
    return [
        Case(
            label=f"{caller} on {what}",
            arguments=lambda organizer_id=organizer_id, user_id=user_id: {
                "organizer_id": organizer_id,
                "user_id": user_id,
            },
        )
        for caller, user_id in callers.items()
        for what, organizer_id in asked.items()
    ]


def _reaches() -> list[tuple[str, OrganizerReach]]:
    """Five organizers; a user who is a member of three of them, in different roles."""
    organizers = OrganizerFactory.create_batch(5)
    user = UserFactory()
    for organizer, role in zip(organizers[1:4], Membership.Role.values, strict=False):
        MembershipFactory(user=user, organizer=organizer, role=role)
    MembershipFactory(organizer=organizers[0])  # another user's
    return [
        ("a platform application's token", OrganizerReach(none=True)),
        ("every organizer", OrganizerReach()),
        ("an organizer's application token", OrganizerReach(organizer_id=organizers[2].pk)),
        ("a user token", OrganizerReach(member_user_id=user.pk)),
        (
            "a user token through the organizer's application",
            OrganizerReach(organizer_id=organizers[2].pk, member_user_id=user.pk),
        ),
        (
            "a user token through an application of an organizer it is not a member of",
            OrganizerReach(organizer_id=organizers[4].pk, member_user_id=user.pk),
        ),
    ]


def _as_read(organizers) -> list[dict]:
    """Every field of each organizer as loaded, and its `role`."""
    fields = [f.attname for f in organizers[0]._meta.concrete_fields] if organizers else []
    return [{**{f: getattr(o, f) for f in fields}, "role": o.role} for o in organizers]


def _page_cases() -> list[Case]:
    return [
        Case(
            label=f"{label}, offset {offset}, limit {limit}",
            arguments=lambda reach=reach, offset=offset, limit=limit: {
                "reach": reach,
                "offset": offset,
                "limit": limit,
            },
            result=_as_read,
        )
        for label, reach in _reaches()
        for offset, limit in [(0, 10), (0, 2), (1, 2), (2, 10), (9, 10)]
    ]


def _count_cases() -> list[Case]:
    return [
        Case(label=label, arguments=lambda reach=reach: {"reach": reach})
        for label, reach in _reaches()
    ]


CASES = {
    "organizers.statements.organizer_access": _access_cases,
    "organizers.statements.organizers_page": _page_cases,
    "organizers.statements.organizers_count": _count_cases,
}

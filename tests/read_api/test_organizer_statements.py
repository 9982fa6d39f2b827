"""`GET /organizers` without parameters reads its page and count with plain statements
(`organizers.selectors.organizers_page`, `organizers_count`): held here to the ORM's query they
replace (`organizers_in_reach` in the default order), for every reach a token can have."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from organizers.models import Membership
from organizers.permissions import OrganizerReach
from organizers.selectors import organizers_count, organizers_in_reach, organizers_page
from tests.factories import MembershipFactory, OrganizerFactory, UserFactory
from ticketing.api.filtering import DEFAULT_ORDER_BY, order_queryset

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    """Five organizers; a user who is a member of three of them, in different roles."""
    organizers = OrganizerFactory.create_batch(5)
    user = UserFactory()
    for organizer, role in zip(organizers[1:4], Membership.Role.values, strict=False):
        MembershipFactory(user=user, organizer=organizer, role=role)
    MembershipFactory(organizer=organizers[0])  # another user's
    return organizers, user


def _reaches(world) -> list[OrganizerReach]:
    organizers, user = world
    return [
        OrganizerReach(none=True),
        OrganizerReach(),  # a platform's view: every organizer
        OrganizerReach(organizer_id=organizers[2].pk),  # an organizer's application token
        OrganizerReach(member_user_id=user.pk),  # a user token
        OrganizerReach(organizer_id=organizers[2].pk, member_user_id=user.pk),  # through its app
        OrganizerReach(organizer_id=organizers[4].pk, member_user_id=user.pk),  # not a member
    ]


def _as_read(organizers) -> list[dict]:
    fields = [f.attname for f in organizers[0]._meta.concrete_fields] if organizers else []
    return [{**{f: getattr(o, f) for f in fields}, "role": o.role} for o in organizers]


@pytest.mark.parametrize(("offset", "limit"), [(0, 10), (0, 2), (1, 2), (2, 10), (9, 10)])
def test_page_and_count_are_the_orm_querys(world, offset, limit):
    for reach in _reaches(world):
        orm = order_queryset(
            organizers_in_reach(reach=reach), order_by=DEFAULT_ORDER_BY, descending=False
        )
        page = organizers_page(reach=reach, offset=offset, limit=limit)
        assert _as_read(page) == _as_read(list(orm[offset : offset + limit])), reach
        assert organizers_count(reach=reach) == orm.count(), reach


def test_the_list_without_parameters_is_one_statement(organizer_client, member):
    organizer_client.get("/api/public/organizers")  # the token is kept
    with CaptureQueriesContext(connection) as queries:
        response = organizer_client.get("/api/public/organizers")
    assert response.status_code == 200
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT"]
    assert [o["role"] for o in response.json()["organizers"]] == [member.memberships.get().role]

"""`GET /organizers`: the organizers the caller may act for (CONTRACT §5)."""

import pytest

from tests.factories import ApplicationFactory, MembershipFactory, OrganizerFactory, UserFactory
from tests.support import TokenClient, mint_token

pytestmark = pytest.mark.django_db


def _iso(value) -> str:
    from django.utils import timezone

    return timezone.localtime(value).isoformat()


def test_user_token_lists_memberships_with_role(platform_application, organizer):
    user = UserFactory()
    second = OrganizerFactory(name="Alpha Events", slug="alpha", description="Concerts")
    MembershipFactory(user=user, organizer=organizer, role="staff")
    MembershipFactory(user=user, organizer=second, role="owner")
    OrganizerFactory()  # not theirs
    client = TokenClient(mint_token(application=platform_application, user=user, scope="public"))

    response = client.get("/api/public/organizers")

    assert response.status_code == 200
    organizer.refresh_from_db()
    second.refresh_from_db()
    assert response.json() == {
        "success": True,
        "organizers": [
            {
                "id": organizer.id,
                "name": "Bangkok Live",
                "slug": "bangkok-live",
                "description": None,
                "avatar": None,
                "role": "staff",
                "created_at": _iso(organizer.created_at),
                "updated_at": _iso(organizer.updated_at),
            },
            {
                "id": second.id,
                "name": "Alpha Events",
                "slug": "alpha",
                "description": "Concerts",
                "avatar": None,
                "role": "owner",
                "created_at": _iso(second.created_at),
                "updated_at": _iso(second.updated_at),
            },
        ],
        "count": 2,
        "total": 2,
        "page": 1,
        "per_page": 10,
    }


def test_user_token_through_an_organizers_app_lists_only_that_organizer(
    application, organizer, other_organizer
):
    user = UserFactory()
    MembershipFactory(user=user, organizer=organizer, role="admin")
    MembershipFactory(user=user, organizer=other_organizer, role="staff")
    client = TokenClient(mint_token(application=application, user=user, scope="public organizer"))
    body = client.get("/api/public/organizers").json()
    assert [(o["id"], o["role"]) for o in body["organizers"]] == [(organizer.id, "admin")]


def test_user_without_membership_gets_empty_list(buyer_client):
    response = buyer_client.get("/api/public/organizers")
    assert response.status_code == 200
    assert response.json()["organizers"] == []
    assert response.json()["total"] == 0


def test_application_token_lists_its_owner_with_null_role(app_client, organizer, other_organizer):
    body = app_client.get("/api/public/organizers").json()
    assert [(o["id"], o["role"]) for o in body["organizers"]] == [(organizer.id, None)]


def test_platform_application_token_lists_none(platform_application, organizer):
    client = TokenClient(mint_token(application=platform_application, scope="public"))
    response = client.get("/api/public/organizers")
    assert response.status_code == 200
    assert response.json()["organizers"] == []


def test_order_search_and_pagination(platform_application):
    user = UserFactory()
    names = ["Delta", "Alpha", "Charlie", "Bravo"]
    organizers = [OrganizerFactory(name=name) for name in names]
    for org in organizers:
        MembershipFactory(user=user, organizer=org, role="admin")
    client = TokenClient(mint_token(application=platform_application, user=user))

    by_id = client.get("/api/public/organizers?per_page=3").json()
    assert [o["name"] for o in by_id["organizers"]] == ["Delta", "Alpha", "Charlie"]
    assert (by_id["count"], by_id["total"], by_id["page"], by_id["per_page"]) == (3, 4, 1, 3)
    page2 = client.get("/api/public/organizers?per_page=3&page=2").json()
    assert [o["name"] for o in page2["organizers"]] == ["Bravo"]
    past = client.get("/api/public/organizers?page=9").json()
    assert past["organizers"] == [] and past["total"] == 4

    desc = client.get("/api/public/organizers?order_by=name&order=desc").json()
    assert [o["name"] for o in desc["organizers"]] == ["Delta", "Charlie", "Bravo", "Alpha"]
    search = client.get("/api/public/organizers?q=LTA").json()
    assert [o["name"] for o in search["organizers"]] == ["Delta"]
    exact = client.get(f'/api/public/organizers?q={{"id": {organizers[2].id}}}').json()
    assert [o["name"] for o in exact["organizers"]] == ["Charlie"]
    by_role = client.get('/api/public/organizers?q={"role": "staff"}').json()
    assert by_role["organizers"] == []


@pytest.mark.parametrize(
    "query, field",
    [
        ("order_by=slug", "order_by"),
        ("order=up", "order"),
        ("per_page=0", "per_page"),
        ("per_page=101", "per_page"),
        ("page=abc", "page"),
        ("q={bad json", "q"),
        ('q={"owner": 1}', "q"),
    ],
)
def test_invalid_parameters_are_400(buyer_client, query, field):
    response = buyer_client.get(f"/api/public/organizers?{query}")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_parameters"
    assert list(body["fields"]) == [field]


@pytest.mark.parametrize("n", [1, 20])
def test_query_count_is_constant(platform_application, django_assert_num_queries, n, settings):
    settings.API_TOKEN_CACHE_SECONDS = 0  # the token is looked up each time: the worst case
    user = UserFactory()
    for _ in range(n):
        MembershipFactory(user=user, organizer=OrganizerFactory())
    client = TokenClient(mint_token(application=platform_application, user=user))
    with django_assert_num_queries(2):  # token, page (the last page: no count)
        response = client.get("/api/public/organizers?per_page=100")
    assert response.json()["total"] == n
    with django_assert_num_queries(3):  # token, page, count
        response = client.get(f"/api/public/organizers?per_page={n}")
    assert response.json()["total"] == n


def test_revoked_application_tokens_other_organizers_are_not_listed(organizer, other_organizer):
    # An application of the other organizer lists only its own owner.
    app = ApplicationFactory(organizer=other_organizer)
    client = TokenClient(mint_token(application=app))
    body = client.get("/api/public/organizers").json()
    assert [o["id"] for o in body["organizers"]] == [other_organizer.id]

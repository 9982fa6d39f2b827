"""`GET /organizers` without parameters reads its page and count with plain statements
(`organizers.statements.organizers_page`, `organizers_count`). That they mean the ORM's query
they replace, for every reach a token can have, is the twin test's (tests/statements)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def test_the_list_without_parameters_is_one_statement(organizer_client, member):
    organizer_client.get("/api/public/organizers")  # the token is kept
    with CaptureQueriesContext(connection) as queries:
        response = organizer_client.get("/api/public/organizers")
    assert response.status_code == 200
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT"]
    assert [o["role"] for o in response.json()["organizers"]] == [member.memberships.get().role]

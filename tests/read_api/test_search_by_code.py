"""Find one ticket by code (CONTRACT §7): the answer carries the ticket's form answers whether or
not it has any, though a ticket without answers costs one statement less (issue 14)."""

import pytest

from tests.factories import FormFieldFactory, TicketFactory
from tickets.models import TicketFormAnswer
from tickets.serializers import TicketSerializer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _cold_token_cache(settings):
    """Every call looks its token up: the counts are the same for each."""
    settings.API_TOKEN_CACHE_SECONDS = 0


@pytest.fixture
def answered(event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, reference_code="ANSWER01")
    TicketFormAnswer.objects.create(ticket=ticket, field=FormFieldFactory(event=event), value="L")
    return ticket


@pytest.fixture
def plain(event, ticket_type):
    return TicketFactory(event=event, ticket_type=ticket_type, reference_code="PLAIN001")


def _search(client, url, params, django_assert_num_queries, queries):
    with django_assert_num_queries(queries):
        response = client.get(url, params)
    assert response.status_code == 200, response.content
    return response.json()["ticket"]


def test_event_scoped_search_renders_answers(
    app_client, tickets_url, answered, plain, django_assert_num_queries
):
    url = f"{tickets_url}/search"
    # token, ticket with its event's organizer [+ its answers]
    found = _search(app_client, url, {"reference_code": "answer01"}, django_assert_num_queries, 3)
    assert found == TicketSerializer(answered).data
    assert [a["value"] for a in found["forms"]] == ["L"]
    found = _search(app_client, url, {"reference_code": "plain001"}, django_assert_num_queries, 2)
    assert found == TicketSerializer(plain).data
    assert found["forms"] == []


def test_global_search_renders_answers(
    organizer_client, event, answered, plain, django_assert_num_queries
):
    url = "/api/public/tickets/search"
    params = {"event_id": event.id, "reference_code": "answer01"}
    found = _search(organizer_client, url, params, django_assert_num_queries, 3)
    assert found == TicketSerializer(answered).data
    params["reference_code"] = "plain001"
    found = _search(organizer_client, url, params, django_assert_num_queries, 2)
    assert found["id"] == plain.id and found["forms"] == []

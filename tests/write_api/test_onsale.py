"""An on-sale rush: the statements of one creation, and where the ticket type's row lock is.

Every sale of a type waits for the type's row lock (the capacity claim). On PostgreSQL a creation
is one statement, which checks the event, claims and writes everything: the lock lasts that
statement. The ORM path (SQLite, and here when the statement is turned off) claims last, just
before COMMIT, so the lock is held for one statement and the commit whatever it inserts.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_tasks_db.models import DBTaskResult

from events.models import TicketType
from tests.factories import TicketTypeFactory, WebhookEndpointFactory
from tickets.models import Ticket
from tickets.services import issuing
from webhooks.models import WebhookEvent

from .helpers import client_for, db_state, tickets_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

HOLDER = {
    "firstname": "Anan",
    "lastname": "Wong",
    "email": "anan@example.com",
    "phone": "0812345678",
}
TYPE_TABLE = TicketType._meta.db_table


def _statements(client, event, ticket_type, **fields) -> tuple[int, list[str]]:
    """Create a ticket; its status and the statements it ran, each cut to its first words."""
    body = {"ticket_type_id": ticket_type.id, **HOLDER, **fields}
    with CaptureQueriesContext(connection) as context:
        response = client.post(tickets_url(event), body)
    return response.status_code, [_kind(q["sql"]) for q in context.captured_queries]


def _kind(sql: str) -> str:
    """`SELECT <first column>`, `INSERT INTO <table>`, `UPDATE <table>`, `BEGIN`, `COMMIT`."""
    words = sql.split()
    return " ".join(words[:3] if words[0] == "INSERT" else words[:2])


@pytest.fixture
def client(user_token):
    return client_for(user_token)


def _warm(client, event, ticket_type) -> None:
    """A first creation: the token and the webhook subscriptions are in the cache afterwards."""
    body = {"ticket_type_id": ticket_type.id, **HOLDER, "external_id": "WARM"}
    assert client.post(tickets_url(event), body).status_code == 200


def test_creation_is_one_statement(client, event, ticket_type):
    _warm(client, event, ticket_type)
    status, statements = _statements(client, event, ticket_type, external_id="RUSH-0")
    assert status == 200
    # The event's check, the claim, the order, the ticket and the queued email, in one
    # autocommit statement.
    assert statements == ["WITH claim"]


def test_creation_with_a_webhook_endpoint_is_still_one_statement(
    client, event, organizer, ticket_type
):
    WebhookEndpointFactory(organizer=organizer)
    _warm(client, event, ticket_type)
    status, statements = _statements(client, event, ticket_type, external_id="RUSH-00")
    assert status == 200
    assert statements == ["WITH claim"]  # the webhook event is the statement's too
    assert WebhookEvent.objects.filter(type="ticket.created").count() == 2


@pytest.fixture
def orm_path(monkeypatch):
    """The ORM path, as on SQLite."""
    monkeypatch.setattr(issuing, "issuing_statement_available", lambda: False)


def test_orm_path_claims_the_place_last_just_before_commit(orm_path, client, event, ticket_type):
    _warm(client, event, ticket_type)
    status, statements = _statements(client, event, ticket_type, external_id="RUSH-1")
    assert status == 200
    # No lookup of the external_id: its unique constraint finds a replay on insert.
    assert statements == [
        "SELECT e.id,",  # the event, of the organizer
        'SELECT "events_tickettype"."id",',  # the type, read without a lock
        "BEGIN",
        'INSERT INTO "orders_order"',
        'INSERT INTO "tickets_ticket"',
        'SELECT "webhooks_webhookendpoint"."event_types"',  # does an endpoint want it? Now.
        'INSERT INTO "tickets_ticketemail"',  # the email, queued
        f'UPDATE "{TYPE_TABLE}"',  # the claim: the type's row lock from here
        "COMMIT",
    ]


def test_orm_path_with_a_webhook_endpoint_still_claims_last(
    orm_path, client, event, organizer, ticket_type
):
    WebhookEndpointFactory(organizer=organizer)
    _warm(client, event, ticket_type)
    status, statements = _statements(client, event, ticket_type, external_id="RUSH-2")
    assert status == 200
    assert len(statements) == 10  # + the webhook event (the outbox: no task in the request)
    assert statements[-2:] == [f'UPDATE "{TYPE_TABLE}"', "COMMIT"]


def test_sold_out_type_is_refused_without_a_transaction(client, event):
    ticket_type = TicketTypeFactory(event=event, quantity=1)
    _warm(client, event, ticket_type)
    before = db_state(event)
    status, statements = _statements(client, event, ticket_type, external_id="LATE")
    assert status == 422
    assert statements == [
        "WITH claim",  # no place: it writes nothing
        "SELECT e.id,",  # why: the event (unknown, not on sale), the type (unknown, full)
        'SELECT "events_tickettype"."id",',
        'SELECT "tickets_ticket"."id",',  # a replay would still answer
    ]
    assert db_state(event) == before


def test_replay_with_its_own_reference_code_is_answered_as_a_replay(client, event, ticket_type):
    fields = {"external_id": "PARTNER-9", "reference_code": "OWN-CODE-9"}
    first = client.post(tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER, **fields})
    again = client.post(tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER, **fields})
    assert again.status_code == 200
    assert again.json() == {"success": True, "idempotent": True, "ticket": first.json()["ticket"]}
    assert Ticket.objects.filter(event=event).count() == 1
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 1


def test_claim_refused_at_commit_time_rolls_everything_back(orm_path, monkeypatch, client, event):
    # Room when read, none when claimed: other sales took the places in between.
    ticket_type = TicketTypeFactory(event=event, quantity=1, sold_count=1)
    monkeypatch.setattr(issuing, "_refusal", lambda **kwargs: None)  # the read saw room
    before = db_state(event)
    response = client.post(tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER})
    assert response.status_code == 422
    assert response.json()["error"] == "quota_exceeded"
    assert db_state(event) == before
    assert not DBTaskResult.objects.exists()  # nor the email task

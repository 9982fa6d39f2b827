"""A ticket issued in one statement: the place claimed, the order and the ticket inserted, the
`ticket.created` event and the holder's email queued, in one round trip (PostgreSQL).

The API's creation is an on-sale's hot path: every sale of a ticket type takes that type's row
lock to claim its place, so the lock is held for as long as a sale takes. In the ORM path
(`issuing.tickets_issue` then the claim) that is a transaction of several round trips; here it
is one autocommit statement, which writes what the ORM path writes, row for row (each value as
the ORM prepares it: `ticketing.db.insert_params`), and holds the lock only while it runs.
tests/write_api/test_issue_statement.py holds the two paths together.

The claim is `events.services.ticket_type_claim_sql`; no row back means nothing was written:
the event is not the organizer's or not on sale, the type is not the event's, or it has no
place left (`issuing` tells which). A unique key already taken (`external_id`,
`reference_code`) fails the statement, as it fails the ORM's INSERT, and `issuing` answers it
the same way.
"""

from __future__ import annotations

import contextlib
import functools
from datetime import datetime

from django.db import transaction

from events.models import TicketType
from events.services import ticket_type_claim_sql
from ticketing.db import insert_params, insert_sql, select_list
from webhooks.selectors import webhook_wants

from ..email_status import TicketEmail
from ..models import Order, Ticket
from ..selectors import ticket_from_output_row
from .publishing import Type, ticket_statement_event_params, ticket_statement_event_sql


def issuing_statement_available() -> bool:
    return transaction.get_connection().vendor == "postgresql"


def ticket_issue_statement(
    *, event_id: int, organizer_id: int, order: Order, ticket: Ticket, notify: bool, now: datetime
) -> Ticket | None:
    """Issue `ticket` (unsaved, built as `issuing.ticket_built` builds it) in `order` (unsaved),
    claiming a place of its type (and of the API's quota if `issued_via_api`); the ticket as
    stored, with its type, or None if nothing was written.

    Raises: IntegrityError (external_id or reference_code taken).
    Locks: the ticket type row, for the statement (its own transaction, or a savepoint of the
    caller's).
    """
    publish = webhook_wants(organizer_id=organizer_id, type=Type.TICKET_CREATED)
    notify = notify and bool(ticket.email)
    params = {
        "ticket_type_id": ticket.ticket_type_id,
        "event_id": event_id,
        "organizer_id": organizer_id,
        "via_api": ticket.issued_via_api,
        "now": now,
    }
    params |= insert_params(order, name="new_order") | insert_params(ticket, name="issued")
    if publish:
        params |= ticket_statement_event_params(
            organizer_id=organizer_id, event_id=event_id, type=Type.TICKET_CREATED, at=now
        )
    if notify:
        email = TicketEmail(
            status=TicketEmail.Status.QUEUED, attempts=0, error="", at=now, queued_at=now
        )
        params |= insert_params(email, name="email")
    connection = transaction.get_connection()
    # In a caller's transaction a failed statement must not spoil it: a savepoint. Alone, the
    # statement is its own transaction, with no BEGIN and COMMIT to wait for.
    in_savepoint = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    with in_savepoint, connection.cursor() as cursor:
        cursor.execute(issue_sql(publish=publish, notify=notify), params)
        row = cursor.fetchone()
    return None if row is None else ticket_from_output_row(row, using=connection.alias)


@functools.cache
def issue_sql(*, publish: bool, notify: bool) -> str:
    clauses = [
        ticket_type_claim_sql(name="claim"),
        insert_sql(Order, name="new_order", source="claim", values={}, returning="id"),
        insert_sql(
            Ticket,
            name="issued",
            source="new_order",
            values={"order_id": "new_order.id"},
            returning="*",
        ),
    ]
    if publish:
        clauses.append(ticket_statement_event_sql(ticket="issued"))
    if notify:
        values = {"ticket_id": "issued.id", "recipient": "issued.email"}
        clauses.append(insert_sql(TicketEmail, name="email", source="issued", values=values))
    # `ticket_from_output_row`'s columns; a ticket just issued has no form answers.
    columns = f"{select_list(Ticket, 'issued')}, {select_list(TicketType, 'claim')}, false"
    return "WITH " + ",\n".join(clauses) + f"\nSELECT {columns} FROM issued, claim"

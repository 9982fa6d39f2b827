"""A ticket issued in one statement (see the package's docstring): the place claimed, the order
and the ticket inserted, the `ticket.created` event and the holder's email queued, in one round
trip (PostgreSQL).

The claim is events' (`Claim`: its rule as a clause and as the ORM's UPDATE, handed over by
`services.issuing`, since a statement module imports no services); no row back means nothing
was written: the event is not the organizer's or not on sale, the type is not the event's, or
it has no place left (`issuing` tells which). A unique key already taken (`external_id`,
`reference_code`) fails the statement, as it fails the ORM's INSERT, and `issuing` answers it
the same way.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from events.models import Event, TicketType
from ticketing.api.fields import datetime_representation
from ticketing.db import insert_params, insert_sql
from ticketing.twins import fetch_dict, replaces
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_wants
from webhooks.statements import event_insert_sql

from ..email_outbox import ticket_emails_queue
from ..email_status import TicketEmail
from ..models import Order, Ticket
from .rows import named_columns, ticket_from


@dataclass(frozen=True)
class Claim:
    """A place of a ticket type claimed, as `events.services` writes the rule: `sql`, a clause
    of a WITH named `claim` (`ticket_type_claim_sql`); `places`, the ORM's conditional UPDATE
    (`ticket_type_claim_places`)."""

    sql: str
    places: Callable[..., bool]


def ticket_issue_orm(
    *, claim: Claim, organizer_id: int, order: Order, ticket: Ticket, notify: bool
) -> Ticket | None:
    """`ticket_issue` by the ORM: what the statement replaces."""
    on_sale = Event.objects.filter(
        organizer_id=organizer_id, status=Event.Status.ACTIVE, end_at__gt=ticket.registered_at
    )
    of_the_event = TicketType.objects.filter(pk=ticket.ticket_type_id, event_id=ticket.event_id)
    if not of_the_event.filter(event__in=on_sale).exists():
        return None
    with transaction.atomic():
        if not claim.places(ticket_type_id=ticket.ticket_type_id, via_api=ticket.issued_via_api):
            return None
        order.save(force_insert=True)
        ticket.save(force_insert=True)
        if webhook_wants(organizer_id=organizer_id, type=WebhookEvent.Type.TICKET_CREATED):
            WebhookEvent.objects.create(
                organizer_id=organizer_id,
                type=WebhookEvent.Type.TICKET_CREATED,
                payload={"data": None},
                created_at=ticket.registered_at,
            )
        if notify:
            ticket_emails_queue([ticket])
    ticket.ticket_type = TicketType.objects.get(pk=ticket.ticket_type_id)
    ticket.has_answers = False
    return ticket


@replaces(ticket_issue_orm)
def ticket_issue(
    *, claim: Claim, organizer_id: int, order: Order, ticket: Ticket, notify: bool
) -> Ticket | None:
    """Issue `ticket` (unsaved, built as `issuing.ticket_built` builds it, `registered_at` the
    time of the sale) in `order` (unsaved), claiming a place of its type (and of the API's
    quota if `issued_via_api`); the ticket as stored, with its type as claimed, annotated
    `has_answers` (False), or None if nothing was written.

    Raises: IntegrityError (external_id or reference_code taken).
    Locks: the ticket type row, for the statement (its own transaction, or a savepoint of the
    caller's).
    """
    notify = notify and bool(ticket.email)
    now, event_id = ticket.registered_at, ticket.event_id
    params = {
        "ticket_type_id": ticket.ticket_type_id,
        "event_id": event_id,
        "organizer_id": organizer_id,
        "via_api": ticket.issued_via_api,
        "now": now,
        "now_text": datetime_representation(now),
    }
    params |= insert_params(order, name="new_order") | insert_params(ticket, name="issued")
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
        cursor.execute(issue_sql(claim.sql, notify=notify), params)
        row = fetch_dict(cursor)
    return None if row is None else ticket_from(row, using=connection.alias)


@functools.cache
def issue_sql(claim_sql: str, *, notify: bool) -> str:
    """The issuing statement: claim a place, write the order and the ticket, record
    `ticket.created` when an endpoint wants it, and with `notify` queue the holder's email."""
    clauses = [
        claim_sql,
        insert_sql(Order, name="new_order", source="claim", values={}, returning="id"),
        insert_sql(
            Ticket,
            name="issued",
            source="new_order",
            values={"order_id": "new_order.id"},
            returning="*",
        ),
        ticket_event_sql(ticket="issued", type=WebhookEvent.Type.TICKET_CREATED),
    ]
    if notify:
        values = {"ticket_id": "issued.id", "recipient": "issued.email"}
        clauses.append(insert_sql(TicketEmail, name="email", source="issued", values=values))
    columns = named_columns(ticket="issued", ticket_type="claim", answered=False)
    return "WITH " + ",\n".join(clauses) + f"\nSELECT {columns} FROM issued, claim"


# --- The webhook event of a statement that changes a ticket ---------------------------------

# The clause's name; short, as the gate's admission, which runs it, must stay within what
# psycopg keeps converted.
TICKET_EVENT = "ev"


def ticket_event_sql(*, ticket: str, type: str) -> str:
    """A clause of a WITH that records an event of `type` for the ticket `ticket` yields (the
    name of a query returning the ticket's row), with that row and its ticket type's, from which
    its dispatch renders the event's data (`services.publishing.ticket_row_render`, the renderer
    of the `ticket.*` types). For the statements that change a ticket in one round trip, whose
    values name the change's organizer, event and time (`webhooks.statements.event_insert_sql`)."""
    return event_insert_sql(
        name=TICKET_EVENT,
        type=type,
        source=f"{ticket} JOIN {TicketType._meta.db_table} AS ct"
        f" ON ct.id = {ticket}.ticket_type_id",
        rows=f"jsonb_build_object('ticket', to_jsonb({ticket}), 'ticket_type', to_jsonb(ct))",
    )

"""The rows of this app's statements: tickets read by column name (`named_columns`,
`ticket_from`), and the positional select list the gate's admission still reads
(`ticket_output_columns`, `selectors.ticket_from_output_row`) and the JSON image of such a row
it keeps for a replay (`ticket_image_sql`, `output_row_of_image`)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from django.db import connections, router
from django.db.models import Exists, OuterRef

from events.models import Event, TicketType
from ticketing.db import from_row, select_list

from ..models import Order, Ticket, TicketFormAnswer

TICKET, TICKET_TYPE, ORDER, EVENT = (m._meta.db_table for m in (Ticket, TicketType, Order, Event))
# The columns of a ticket's type in a row of `named_columns`, apart from the ticket's own.
TYPE_PREFIX = "type__"


def reading():
    """The database this request reads tickets from: a replica on the routes that allow one
    (ticketing.db_routing), else the primary."""
    return connections[router.db_for_read(Ticket)]


def _answered(ticket: str) -> str:
    answers = TicketFormAnswer._meta.db_table
    return f"EXISTS (SELECT 1 FROM {answers} AS a WHERE a.ticket_id = {ticket}.id)"


@functools.cache
def named_columns(*, ticket: str, ticket_type: str, answered: bool = True) -> str:
    """The select list of a ticket for `TicketSerializer`, each column named: the ticket's,
    its type's (`TYPE_PREFIX`), and `has_answers` (false without `answered`: a ticket just
    inserted has none)."""
    quote = connections["default"].ops.quote_name
    own = [f"{ticket}.{f.column} AS {quote(f.column)}" for f in Ticket._meta.concrete_fields]
    types = [
        f"{ticket_type}.{f.column} AS {quote(TYPE_PREFIX + f.column)}"
        for f in TicketType._meta.concrete_fields
    ]
    has_answers = _answered(ticket) if answered else "false"
    return ", ".join([*own, *types, f"{has_answers} AS has_answers"])


def _instance(model, row: dict[str, Any], *, prefix: str = "", using: str):
    """The instance of `model` whose columns `row` holds by name (`prefix` + column)."""
    values = [row[prefix + f.column] for f in model._meta.concrete_fields]
    return from_row(model, values, using=using)


def ticket_from(row: dict[str, Any], *, using: str, types: dict | None = None) -> Ticket:
    """The ticket of a `named_columns` row with its type, annotated `has_answers`. `types`:
    the types already loaded, by id, which the tickets of one page share."""
    ticket = _instance(Ticket, row, using=using)
    types = {} if types is None else types
    if ticket.ticket_type_id not in types:
        types[ticket.ticket_type_id] = _instance(TicketType, row, prefix=TYPE_PREFIX, using=using)
    ticket.ticket_type = types[ticket.ticket_type_id]
    ticket.has_answers = bool(row["has_answers"])
    return ticket


def with_types():
    """The ORM's form of a `named_columns` row."""
    answers = TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk"))
    return Ticket.objects.select_related("ticket_type").annotate(has_answers=Exists(answers))


# The columns by which a gate or a search names a ticket: each a unique index in its event.
TICKET_KEY_COLUMNS = ("id", "reference_code", "nfc_uid")


def ticket_key_column(column: str) -> str:
    """`column`, checked to be one of `TICKET_KEY_COLUMNS` (it is written into SQL)."""
    if column not in TICKET_KEY_COLUMNS:
        raise ValueError(f"not a unique key of a ticket in its event: {column}")
    return column


def ticket_output_columns(*, ticket: str, ticket_type: str, whole: bool = False) -> str:
    """The select list of a statement that loads a ticket for `TicketSerializer` by position:
    the ticket's columns, its type's, whether it has form answers
    (`selectors.ticket_from_output_row`). `whole`: `ticket` is a statement's own relation of
    exactly the ticket's columns in that order (a `RETURNING` of `select_list(Ticket, ...)`),
    named `ticket.*` for a shorter text."""
    own = f"{ticket}.*" if whole else select_list(Ticket, ticket)
    return f"{own}, {select_list(TicketType, ticket_type)}, {_answered(ticket)}"


# --- The image of a ticket as a statement loaded it ------------------------------------------
# A row of `ticket_output_columns` kept as JSON (`ticket_image_sql`, `ticket_image` for the ORM)
# and read back into that row (`output_row_of_image`): what rendered an answer once renders it
# again, whatever changed the ticket since. Its key `TICKET_IMAGE` names it among other JSON.

TICKET_IMAGE = "ticket_row"


def ticket_image_sql(*, ticket: str, ticket_type: str) -> str:
    """The JSON image of the ticket (`ticket`: a relation of at least its columns) and its type
    as the statement sees them, with whether it has form answers."""
    return (
        f"jsonb_build_object('{TICKET_IMAGE}', {ticket}, 'ticket_type_row', {ticket_type}, "
        f"'has_answers', {_answered(ticket)})"
    )


def ticket_image(ticket: Ticket, *, has_answers: bool) -> dict[str, Any]:
    """`ticket_image_sql` of a ticket loaded with its type by the ORM."""
    return {
        TICKET_IMAGE: _columns(ticket),
        "ticket_type_row": _columns(ticket.ticket_type),
        "has_answers": has_answers,
    }


def _columns(instance) -> dict[str, Any]:
    """An instance's columns as PostgreSQL's `to_jsonb` of its row writes them (times in ISO
    8601)."""
    values = {f.column: getattr(instance, f.attname) for f in instance._meta.concrete_fields}
    return {
        column: value.isoformat() if isinstance(value, datetime) else value
        for column, value in values.items()
    }


def output_row_of_image(image: dict[str, Any]) -> list[Any]:
    """The `ticket_output_columns` row an image holds, each value as the driver returns it
    (JSON keeps a time as text: its field parses it)."""
    ticket, ticket_type = image[TICKET_IMAGE], image["ticket_type_row"]
    return [
        *_values(Ticket, ticket),
        *_values(TicketType, ticket_type),
        image["has_answers"],
    ]


def _values(model, columns: dict[str, Any]) -> list[Any]:
    values = [(f, columns[f.column]) for f in model._meta.concrete_fields]
    return [f.to_python(value) if value is not None else None for f, value in values]

"""The reads of tickets written by hand (see the package's docstring)."""

from __future__ import annotations

import functools
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Lower

from organizers.models import Membership
from ticketing.twins import fetch_dict, fetch_dicts, replaces

from ..models import Order, Ticket
from .rows import (
    EVENT,
    ORDER,
    TICKET,
    TICKET_TYPE,
    named_columns,
    reading,
    ticket_from,
    ticket_key_column,
    with_types,
)


def event_ticket_page_orm(*, event_id: int, offset: int, per_page: int):
    """`event_ticket_page` by the ORM: what the statement replaces."""
    page = with_types().filter(event_id=event_id).order_by("id")[offset : offset + per_page]
    tickets = list(page)
    return tickets, (Ticket.objects.filter(event_id=event_id).count() if tickets else None)


@replaces(event_ticket_page_orm)
def event_ticket_page(*, event_id: int, offset: int, per_page: int):
    """A page of the event's tickets by id, annotated `has_answers`, with the event's count
    (None for an empty page). The page's ids come from the event's index alone, then their
    rows; the count reads the same index, in the same snapshot."""
    sql = f"""SELECT (SELECT COUNT(*) FROM {TICKET} WHERE event_id = %s) AS total,
        {named_columns(ticket="t", ticket_type="tt")}
        FROM {TICKET} AS t JOIN {TICKET_TYPE} AS tt ON tt.id = t.ticket_type_id
        WHERE t.id IN (
            SELECT id FROM {TICKET} WHERE event_id = %s ORDER BY id LIMIT %s OFFSET %s
        )
        ORDER BY t.id"""
    connection = reading()
    with connection.cursor() as cursor:
        cursor.execute(sql, [event_id, event_id, per_page, offset])
        rows = fetch_dicts(cursor)
    types: dict = {}
    tickets = [ticket_from(row, using=connection.alias, types=types) for row in rows]
    return tickets, (rows[0]["total"] if rows else None)


def event_ticket_count_orm(*, event_id: int) -> int:
    return Ticket.objects.filter(event_id=event_id).count()


@replaces(event_ticket_count_orm)
def event_ticket_count(*, event_id: int) -> int:
    """How many tickets the event has (read from its index alone)."""
    with reading().cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) AS n FROM {TICKET} WHERE event_id = %s", [event_id])
        return fetch_dict(cursor)["n"]


# --- One ticket by a unique key -------------------------------------------------------------


def event_ticket_orm(*, event_id: int, organizer_id: int, key: dict[str, Any]) -> Ticket | None:
    """`event_ticket` by the ORM: what the statement replaces."""
    found = with_types().filter(event_id=event_id, event__organizer_id=organizer_id, **key)
    return next(iter(found[:1]), None)


@replaces(event_ticket_orm)
def event_ticket(*, event_id: int, organizer_id: int, key: dict[str, Any]) -> Ticket | None:
    """The ticket of the organizer's event whose `key` columns (`TICKET_KEY_COLUMNS`) have
    these values, with its type, annotated `has_answers`; None if the event is not the
    organizer's or has no such ticket."""
    connection = reading()
    with connection.cursor() as cursor:
        cursor.execute(_event_ticket_sql(tuple(key)), [event_id, organizer_id, *key.values()])
        row = fetch_dict(cursor)
    return None if row is None else ticket_from(row, using=connection.alias)


@functools.cache
def _event_ticket_sql(key_columns: tuple[str, ...]) -> str:
    match = " AND ".join(f"t.{ticket_key_column(column)} = %s" for column in key_columns)
    return f"""SELECT {named_columns(ticket="t", ticket_type="tt")}
        FROM {TICKET} AS t
        JOIN {EVENT} AS e ON e.id = t.event_id
        JOIN {TICKET_TYPE} AS tt ON tt.id = t.ticket_type_id
        WHERE t.event_id = %s AND e.organizer_id = %s AND {match}"""


def caller_ticket_orm(*, event_id, reference_code, organizer_id, user_id, email, member):
    """`caller_ticket` by the ORM: what the statement replaces."""
    queryset = with_types().filter(event_id=event_id, reference_code=reference_code)
    if organizer_id is not None:
        queryset = queryset.filter(event__organizer_id=organizer_id)
    if user_id is not None:
        queryset = queryset.alias(email_lower=Lower("email"))
        orders = Order.objects.alias(buyer_email_lower=Lower("buyer_email"))
        buyer = Q(buyer_id=user_id) | (Q(buyer_email_lower=email) if email else Q(pk__in=[]))
        visible = Q(holder_id=user_id) | Q(order__in=orders.filter(buyer).values("id"))
        if email:
            visible |= Q(email_lower=email)
        if member:
            members = Membership.objects.filter(
                user_id=user_id, organizer_id=OuterRef("event__organizer_id")
            )
            visible |= Q(Exists(members))
        queryset = queryset.filter(visible)
    return list(queryset[:1])


@replaces(caller_ticket_orm)
def caller_ticket(
    *,
    event_id: int,
    reference_code: str,
    organizer_id: int | None,
    user_id: int | None,
    email: str | None,
    member: bool,
) -> list[Ticket]:
    """The ticket by event and code that `selectors.ticket_find_for_caller` may show:
    `organizer_id` limits it to an organizer, `user_id` to the user's own tickets (by holder,
    order or `email`; for a `member`, also their organizers'). The conditions apply to the one
    row the unique (event, reference_code) index finds, not to a set of every ticket the user
    owns (an OR over holder, email and orders, which no index builds)."""
    conditions, params = ["t.event_id = %s", "t.reference_code = %s"], [event_id, reference_code]
    if organizer_id is not None:
        conditions.append(
            f"EXISTS (SELECT 1 FROM {EVENT} AS e WHERE e.id = t.event_id AND e.organizer_id = %s)"
        )
        params.append(organizer_id)
    if user_id is not None:
        buyer = "o.buyer_id = %s" + (" OR LOWER(o.buyer_email) = %s" if email else "")
        visible = [
            "t.holder_id = %s",
            f"t.order_id IN (SELECT o.id FROM {ORDER} AS o WHERE {buyer})",
        ]
        params += [user_id, user_id] + ([email] if email else [])
        if email:
            visible.append("LOWER(t.email) = %s")
            params.append(email)
        if member:
            visible.append(
                f"EXISTS (SELECT 1 FROM {Membership._meta.db_table} AS m"
                f" JOIN {EVENT} AS me ON me.organizer_id = m.organizer_id"
                " WHERE me.id = t.event_id AND m.user_id = %s)"
            )
            params.append(user_id)
        conditions.append(f"({' OR '.join(visible)})")
    sql = f"""SELECT {named_columns(ticket="t", ticket_type="tt")}
        FROM {TICKET} AS t JOIN {TICKET_TYPE} AS tt ON tt.id = t.ticket_type_id
        WHERE {" AND ".join(conditions)} LIMIT 1"""
    connection = reading()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [ticket_from(row, using=connection.alias) for row in fetch_dicts(cursor)]

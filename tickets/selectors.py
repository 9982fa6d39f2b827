"""Reads of tickets and orders, each loading what its serializer reads."""

import functools
from dataclasses import dataclass

from django.db import connections, router
from django.db.models import (
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    prefetch_related_objects,
)
from django.db.models.functions import Lower

from events.models import Event, TicketType
from events.selectors import event_get_for_organizer
from organizers.models import Membership
from organizers.permissions import acts_as_member, organizer_reach
from ticketing.api.exceptions import NotFound
from ticketing.api.fields import INT32_MAX
from ticketing.db import from_row, select_list

from .codes import reference_code_normalize
from .models import Order, OrderFormAnswer, Ticket, TicketFormAnswer

# Where the selectors leave a ticket's form answers for `TicketSerializer`: a plain list (as
# `Prefetch(to_attr=...)` does), so a page of tickets costs no queryset per ticket.
FORM_ANSWERS = "form_answer_list"


def _reading():
    """The database this request reads tickets from: a replica on the routes that allow one
    (ticketing.db_routing), else the primary."""
    return connections[router.db_for_read(Ticket)]


def _form_answers_prefetch() -> Prefetch:
    answers = TicketFormAnswer.objects.select_related("field")
    return Prefetch("form_answers", queryset=answers, to_attr=FORM_ANSWERS)


def tickets_for_output(queryset: QuerySet[Ticket] | None = None) -> QuerySet[Ticket]:
    """Tickets with everything `TicketSerializer` reads, in two queries whatever their number."""
    queryset = Ticket.objects.all() if queryset is None else queryset
    return queryset.select_related("ticket_type").prefetch_related(_form_answers_prefetch())


def with_form_answers(ticket: Ticket, *, has_answers: bool = True) -> Ticket:
    """Load what `TicketSerializer` reads from the form answers of one ticket.

    Most tickets have none; when a lookup already told us so, no query is run.
    """
    if has_answers:
        prefetch_related_objects([ticket], _form_answers_prefetch())
    else:
        setattr(ticket, FORM_ANSWERS, [])
    return ticket


def ticket_for_output(**filters) -> Ticket | None:
    """The ticket matching unique `filters`, ready for `TicketSerializer`, or None.

    No `first()`: its ORDER BY id is meaningless on a unique key, and on a growing table with
    stale statistics it can lead the planner away from the unique index.
    """
    ticket = next(iter(Ticket.objects.select_related("ticket_type").filter(**filters)[:1]), None)
    return with_form_answers(ticket) if ticket is not None else None


def event_tickets(*, event_id: int) -> QuerySet[Ticket]:
    """An event's tickets with their types and whether each has form answers; filters and
    order are the caller's. A page of them is ready for `TicketSerializer` once
    `with_form_answers_of` has run: most events ask no questions, and then no page needs the
    answers' query."""
    return _TICKETS_WITH_TYPES.filter(event_id=event_id)


# Built once: resolving the annotation's subquery on every list cost more than its query did.
_TICKETS_WITH_TYPES = Ticket.objects.select_related("ticket_type").annotate(
    has_answers=Exists(TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk")))
)


@dataclass(frozen=True)
class TicketPage:
    tickets: list[Ticket]
    total: int | None  # how many the event has, read with the page; None for an empty page


def event_ticket_page(*, event_id: int, offset: int, per_page: int) -> TicketPage:
    """A page of the event's tickets in the default order, as the list without parameters
    shows it (`event_tickets`, then `order_queryset`), with the event's count: one plain
    statement, where the ORM compiled a new one per page (a third of the list's time) and a
    second counted. The page's ids come from the event's index alone, then their rows; the
    count reads the same index, in the same snapshot. Pinned to the ORM's page and count by
    tests/foundation/test_plain_statements.py."""
    sql = f"""SELECT (
            SELECT COUNT(*) FROM {Ticket._meta.db_table} WHERE event_id = %s
        ), {ticket_output_columns(ticket="t", ticket_type="tt")}
        FROM {Ticket._meta.db_table} AS t
        JOIN {TicketType._meta.db_table} AS tt ON tt.id = t.ticket_type_id
        WHERE t.id IN (
            SELECT id FROM {Ticket._meta.db_table}
            WHERE event_id = %s ORDER BY id LIMIT %s OFFSET %s
        )
        ORDER BY t.id"""
    connection = _reading()
    with connection.cursor() as cursor:
        cursor.execute(sql, [event_id, event_id, per_page, offset])
        rows = cursor.fetchall()
    types: dict[int, TicketType] = {}
    tickets = [_ticket_from_row(row[1:], using=connection.alias, types=types) for row in rows]
    return TicketPage(tickets=tickets, total=rows[0][0] if rows else None)


def event_ticket_count(*, event_id: int) -> int:
    """How many tickets the event has (read from its index alone)."""
    connection = _reading()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {Ticket._meta.db_table} WHERE event_id = %s", [event_id]
        )
        return cursor.fetchone()[0]


def with_form_answers_of(tickets: list[Ticket]) -> list[Ticket]:
    """`with_form_answers` for tickets annotated `has_answers`, in one query for those that
    have some (none when no ticket has)."""
    answered = [ticket for ticket in tickets if ticket.has_answers]
    for ticket in tickets:
        if not ticket.has_answers:
            setattr(ticket, FORM_ANSWERS, [])
    if answered:
        prefetch_related_objects(answered, _form_answers_prefetch())
    return tickets


def event_ticket_find(
    *,
    organizer_id: int,
    event_id: int,
    reference_code: str | None = None,
    nfc_uid: str | None = None,
    ticket_id: int | None = None,
) -> Ticket:
    """One ticket of the organizer's event by exactly one key; each lookup is a unique index.

    One plain statement finds the ticket, its type and whether it has form answers, and checks
    the event is the organizer's; only a miss asks which of the two is missing.

    Raises: NotFound (event, then ticket).
    """
    if not 1 <= event_id <= INT32_MAX:
        raise NotFound("Event not found.")  # no such id (and SQLite cannot even bind some)
    if reference_code is not None:
        column, value = "reference_code", reference_code_normalize(reference_code)
    elif nfc_uid is not None:
        column, value = "nfc_uid", nfc_uid
    else:
        column, value = "id", ticket_id
    connection = _reading()
    with connection.cursor() as cursor:
        cursor.execute(_event_ticket_sql(column), [event_id, organizer_id, value])
        row = cursor.fetchone()
    if row is None:
        event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
        raise NotFound("Ticket not found.")
    return ticket_from_output_row(row, using=connection.alias)


# The columns by which a gate or a search names a ticket: each a unique index in its event.
TICKET_KEY_COLUMNS = ("id", "reference_code", "nfc_uid")


def ticket_key_column(column: str) -> str:
    """`column`, checked to be one of `TICKET_KEY_COLUMNS` (it is written into SQL)."""
    if column not in TICKET_KEY_COLUMNS:
        raise ValueError(f"not a unique key of a ticket in its event: {column}")
    return column


def ticket_output_columns(*, ticket: str, ticket_type: str) -> str:
    """The select list of a plain statement that loads a ticket for `TicketSerializer`: the
    ticket's columns, its type's, whether it has form answers (`ticket_from_output_row`)."""
    return f"""{select_list(Ticket, ticket)}, {select_list(TicketType, ticket_type)}, EXISTS (
        SELECT 1 FROM {TicketFormAnswer._meta.db_table} AS a WHERE a.ticket_id = {ticket}.id
    )"""


def ticket_from_output_row(row, *, using: str) -> Ticket:
    """The ticket a `ticket_output_columns` row holds, ready for `TicketSerializer`."""
    ticket = _ticket_from_row(row, using=using)
    return with_form_answers(ticket, has_answers=ticket.has_answers)


def _ticket_from_row(row, *, using: str, types: dict[int, TicketType] | None = None) -> Ticket:
    """The ticket of a `ticket_output_columns` row with its type, annotated `has_answers`
    (for `with_form_answers_of`). `types`: the types already loaded, by id, which the tickets
    of one page share (a page of 50 is mostly of one or two types)."""
    ticket = from_row(Ticket, row, using=using)
    types = {} if types is None else types
    if ticket.ticket_type_id not in types:
        start = len(Ticket._meta.concrete_fields)
        types[ticket.ticket_type_id] = from_row(TicketType, row, start=start, using=using)
    ticket.ticket_type = types[ticket.ticket_type_id]
    ticket.has_answers = bool(row[-1])
    return ticket


@functools.cache
def _event_ticket_sql(key_column: str) -> str:
    return f"""
        SELECT {ticket_output_columns(ticket="t", ticket_type="tt")}
        FROM {Ticket._meta.db_table} AS t
        JOIN {Event._meta.db_table} AS e ON e.id = t.event_id
        JOIN {TicketType._meta.db_table} AS tt ON tt.id = t.ticket_type_id
        WHERE t.event_id = %s AND e.organizer_id = %s AND t.{ticket_key_column(key_column)} = %s
    """


def _user_email(user) -> str | None:
    email = (user.email or "").strip().lower()
    return email or None  # a blank email must not match every blank-email ticket


def orders_of_user(*, user) -> QuerySet[Order]:
    """Orders that are the user's: bought by them, or for their email (CONTRACT §8)."""
    return _orders_of(user_id=user.pk, email=_user_email(user))


def _orders_of(*, user_id: int, email: str | None) -> QuerySet[Order]:
    """`orders_of_user`; emails compare lower-cased, through the `Lower(buyer_email)` index."""
    condition = Q(buyer_id=user_id)
    if email:
        condition |= Q(buyer_email_lower=email)
    return Order.objects.alias(buyer_email_lower=Lower("buyer_email")).filter(condition)


def orders_for_output(queryset: QuerySet[Order]) -> QuerySet[Order]:
    """Orders with everything `OrderSerializer` reads, in three queries whatever their number."""
    return queryset.prefetch_related(
        Prefetch("form_answers", queryset=OrderFormAnswer.objects.select_related("field")),
        Prefetch("tickets", queryset=Ticket.objects.only("id", "order_id").order_by("id")),
    )


def user_orders_for_organizer(*, user, organizer_id: int) -> QuerySet[Order]:
    """The user's orders (CONTRACT §8) for events of one organizer."""
    return orders_for_output(orders_of_user(user=user).filter(event__organizer_id=organizer_id))


def _users_tickets_q(*, user_id: int, email: str | None) -> Q:
    """Tickets that are the user's: of their orders, held by them, or for their email.

    Needs the `email_lower` alias (`Lower("email")`, the index's expression).
    """
    condition = Q(holder_id=user_id) | Q(
        order__in=_orders_of(user_id=user_id, email=email).values("id")
    )
    if email:
        condition |= Q(email_lower=email)
    return condition


def tickets_of_user(*, user) -> QuerySet[Ticket]:
    """Tickets that are the user's (`_users_tickets_q`).

    A ticket created through the API for the user's email therefore shows in their lists.
    """
    visible = _users_tickets_q(user_id=user.pk, email=_user_email(user))
    return Ticket.objects.alias(email_lower=Lower("email")).filter(visible)


def user_tickets_for_organizer(*, user, organizer_id: int) -> QuerySet[Ticket]:
    """The user's tickets for events of one organizer."""
    return tickets_for_output(tickets_of_user(user=user).filter(event__organizer_id=organizer_id))


def ticket_find_for_caller(*, caller, event_id: int, reference_code: str) -> Ticket:
    """`GET /tickets/search`: one ticket by event and reference code, if the caller may see it.

    A user token sees the user's own tickets, and with scope `organizer` also every ticket of
    the organizers the user belongs to. An application token sees its owner's tickets. A token
    issued through an organizer's application never reaches past that organizer (as the
    organizer paths answer `organizer_mismatch`). Anything else is a 404, which does not reveal
    that the ticket exists.

    Raises: NotFound.
    """
    reach = organizer_reach(caller)
    if reach.none:
        raise NotFound("Ticket not found.")
    found = _caller_ticket(
        event_id=event_id,
        reference_code=reference_code_normalize(reference_code),
        organizer_id=reach.organizer_id,
        user_id=reach.member_user_id,
        email=_user_email(caller.user) if reach.member_user_id is not None else None,
        member=acts_as_member(caller),
    )
    if not found:
        raise NotFound("Ticket not found.")
    return with_form_answers(found[0], has_answers=found[0].has_answers)


def _caller_ticket(
    *,
    event_id: int,
    reference_code: str,
    organizer_id: int | None,
    user_id: int | None,
    email: str | None,
    member: bool,
) -> list[Ticket]:
    """The ticket `ticket_find_for_caller` may show: `organizer_id` limits it to an organizer,
    `user_id` to the user's own tickets (and, for a `member`, their organizers' tickets).

    A plain statement: compiling the ORM's query cost more than running it, on every scan of
    a gate that does not know the event's organizer. The conditions apply to the one row the
    unique (event, reference_code) index finds, not to a set of every ticket the user owns
    (an OR over holder, email and orders, which no index builds). Pinned to the ORM's query by
    tests/foundation/test_plain_statements.py.
    """
    tables = {m.__name__: m._meta.db_table for m in (Ticket, TicketType, Order, Event, Membership)}
    conditions, params = ["t.event_id = %s", "t.reference_code = %s"], [event_id, reference_code]
    if organizer_id is not None:
        conditions.append(
            f"EXISTS (SELECT 1 FROM {tables['Event']} AS e"
            " WHERE e.id = t.event_id AND e.organizer_id = %s)"
        )
        params.append(organizer_id)
    if user_id is not None:
        buyer = "o.buyer_id = %s" + (" OR LOWER(o.buyer_email) = %s" if email else "")
        visible = [
            "t.holder_id = %s",
            f"t.order_id IN (SELECT o.id FROM {tables['Order']} AS o WHERE {buyer})",
        ]
        params += [user_id, user_id] + ([email] if email else [])
        if email:
            visible.append("LOWER(t.email) = %s")
            params.append(email)
        if member:
            visible.append(
                f"EXISTS (SELECT 1 FROM {tables['Membership']} AS m"
                f" JOIN {tables['Event']} AS me ON me.organizer_id = m.organizer_id"
                " WHERE me.id = t.event_id AND m.user_id = %s)"
            )
            params.append(user_id)
        conditions.append(f"({' OR '.join(visible)})")
    sql = f"""SELECT {ticket_output_columns(ticket="t", ticket_type="tt")}
        FROM {tables["Ticket"]} AS t JOIN {tables["TicketType"]} AS tt ON tt.id = t.ticket_type_id
        WHERE {" AND ".join(conditions)} LIMIT 1"""
    connection = _reading()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_ticket_from_row(row, using=connection.alias) for row in cursor.fetchall()]

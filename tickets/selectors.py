"""Reads of tickets and orders, each loading what its serializer reads."""

from dataclasses import dataclass

from django.db.models import (
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    prefetch_related_objects,
)
from django.db.models.functions import Lower

from events.models import TicketType
from events.selectors import event_get_for_organizer
from organizers.permissions import acts_as_member, organizer_reach
from ticketing.api.exceptions import NotFound
from ticketing.api.fields import INT32_MAX
from ticketing.db import from_row

from .codes import reference_code_normalize
from .keys import TicketKey
from .models import Order, OrderFormAnswer, Ticket, TicketFormAnswer
from .statements import reads

# The gate's admission builds its statement from these (and reads it with
# `ticket_from_output_row`), and keeps the image of its row (`ticket_from_image`).
from .statements.rows import TICKET_IMAGE as TICKET_IMAGE
from .statements.rows import TICKET_KEY_COLUMNS as TICKET_KEY_COLUMNS
from .statements.rows import output_row_of_image
from .statements.rows import ticket_image as ticket_image
from .statements.rows import ticket_image_sql as ticket_image_sql
from .statements.rows import ticket_key_column as ticket_key_column
from .statements.rows import ticket_output_columns as ticket_output_columns

# Where the selectors leave a ticket's form answers for `TicketSerializer`: a plain list (as
# `Prefetch(to_attr=...)` does), so a page of tickets costs no queryset per ticket.
FORM_ANSWERS = "form_answer_list"


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
    shows it (`event_tickets`, then `order_queryset`), with the event's count, in one
    statement (`statements.reads.event_ticket_page`)."""
    tickets, total = reads.event_ticket_page(event_id=event_id, offset=offset, per_page=per_page)
    return TicketPage(tickets=tickets, total=total)


def event_ticket_count(*, event_id: int) -> int:
    """How many tickets the event has (read from its index alone)."""
    return reads.event_ticket_count(event_id=event_id)


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
    A reference code may be a signed code (CONTRACT §14), resolved as a gate's (`TicketKey`).

    One statement (`statements.reads.event_ticket`) finds the ticket, its type and whether it
    has form answers, and checks the event is the organizer's; only a miss asks which of the
    two is missing.

    Raises: NotFound (event, then ticket).
    """
    if not 1 <= event_id <= INT32_MAX:
        raise NotFound("Event not found.")  # no such id (and SQLite cannot even bind some)
    key = TicketKey.of(
        organizer_id=organizer_id,
        event_id=event_id,
        ticket_id=ticket_id,
        reference_code=reference_code,
        nfc_uid=nfc_uid,
    )
    ticket = reads.event_ticket(event_id=event_id, organizer_id=organizer_id, key=key.filters)
    if ticket is None:
        event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
        raise NotFound("Ticket not found.")
    return with_form_answers(ticket, has_answers=ticket.has_answers)


def ticket_from_output_row(row, *, using: str) -> Ticket:
    """The ticket a `ticket_output_columns` row holds (by position), ready for
    `TicketSerializer`."""
    ticket = from_row(Ticket, row, using=using)
    start = len(Ticket._meta.concrete_fields)
    ticket.ticket_type = from_row(TicketType, row, start=start, using=using)
    ticket.has_answers = bool(row[-1])
    return with_form_answers(ticket, has_answers=ticket.has_answers)


def ticket_from_image(image, *, using: str) -> Ticket:
    """The ticket of an image of a `ticket_output_columns` row (`ticket_image_sql`), loaded as
    `ticket_from_output_row` loads that row: an answer rendered from the row renders the same
    from its image. Its form answers are read now."""
    return ticket_from_output_row(output_row_of_image(image), using=using)


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
    found = reads.caller_ticket(
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

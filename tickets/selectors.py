"""Reads of tickets and orders, each loading what its serializer reads."""

from django.db.models import (
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    prefetch_related_objects,
)
from django.db.models.functions import Lower

from events.models import CheckInType
from organizers.models import Membership
from organizers.permissions import acts_as_member, organizer_reach
from ticketing.api.exceptions import NotFound

from .codes import reference_code_normalize
from .models import Order, OrderFormAnswer, Ticket, TicketCheckIn, TicketFormAnswer


def tickets_for_output(queryset: QuerySet[Ticket] | None = None) -> QuerySet[Ticket]:
    """Tickets with everything `TicketSerializer` reads, in two queries whatever their number."""
    queryset = Ticket.objects.all() if queryset is None else queryset
    return queryset.select_related("ticket_type").prefetch_related(
        Prefetch("form_answers", queryset=TicketFormAnswer.objects.select_related("field"))
    )


def with_form_answers(ticket: Ticket, *, has_answers: bool = True) -> Ticket:
    """Load what `TicketSerializer` reads from the form answers of one ticket.

    Most tickets have none; when a lookup already told us so, the cache `prefetch_related`
    would leave is set directly: no query, and none of the prefetch machinery's cost, which on
    the check-in path is as large as the query it saves. Django's private names used here are
    pinned by tests/write_api/test_private_caches.py.
    """
    if has_answers:
        answers = TicketFormAnswer.objects.select_related("field")
        prefetch_related_objects([ticket], Prefetch("form_answers", queryset=answers))
    else:
        # What prefetch_related itself leaves for a ticket without answers: an evaluated
        # queryset. A bare `.none()` would still be compiled each time it is read.
        answers = TicketFormAnswer.objects.none()
        answers._result_cache, answers._prefetch_done = [], True
        ticket.__dict__.setdefault("_prefetched_objects_cache", {})["form_answers"] = answers
    return ticket


def ticket_for_output(**filters) -> Ticket | None:
    """The ticket matching unique `filters`, ready for `TicketSerializer`, or None.

    No `first()`: its ORDER BY id is meaningless on a unique key, and on a growing table with
    stale statistics it can lead the planner away from the unique index.
    """
    ticket = next(iter(Ticket.objects.select_related("ticket_type").filter(**filters)[:1]), None)
    return with_form_answers(ticket) if ticket is not None else None


def _one_for_output(queryset: QuerySet[Ticket]) -> Ticket | None:
    """The one ticket a unique key selects, ready for `TicketSerializer`, or None.

    Whether it has form answers comes with the row, so the common ticket without any costs one
    statement instead of two.
    """
    answers = TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk"))
    queryset = queryset.select_related("ticket_type").annotate(has_answers=Exists(answers))
    ticket = next(iter(queryset[:1]), None)
    return with_form_answers(ticket, has_answers=ticket.has_answers) if ticket else None


def check_in_types_for_ticket(ticket: Ticket) -> dict[int, CheckInType]:
    """The event's check-in types by id, each annotated with whether this ticket may use it
    (`restricted`, `valid_for_ticket`) and when it was admitted there (`admitted_at`, None if
    not). One query; events have a handful."""
    through = CheckInType.ticket_types.through
    return {
        t.pk: t
        for t in CheckInType.objects.filter(event_id=ticket.event_id).annotate(
            restricted=Exists(through.objects.filter(checkintype_id=OuterRef("pk"))),
            valid_for_ticket=Exists(
                through.objects.filter(
                    checkintype_id=OuterRef("pk"), tickettype_id=ticket.ticket_type_id
                )
            ),
            admitted_at=Subquery(
                TicketCheckIn.objects.filter(
                    ticket_id=ticket.pk, check_in_type_id=OuterRef("pk")
                ).values("used_at")[:1]
            ),
        )
    }


def event_tickets(*, event_id: int) -> QuerySet[Ticket]:
    """An event's tickets, ready for `TicketSerializer`; filters and order are the caller's."""
    return tickets_for_output(Ticket.objects.filter(event_id=event_id))


def event_ticket_find(
    *,
    event_id: int,
    reference_code: str | None = None,
    nfc_uid: str | None = None,
    ticket_id: int | None = None,
) -> Ticket:
    """One ticket of the event by exactly one key; each lookup is a unique index.

    Raises: NotFound.
    """
    if reference_code is not None:
        condition = Q(reference_code=reference_code_normalize(reference_code))
    elif nfc_uid is not None:
        condition = Q(nfc_uid=nfc_uid)
    else:
        condition = Q(id=ticket_id)
    ticket = _one_for_output(Ticket.objects.filter(condition, event_id=event_id))
    if ticket is None:
        raise NotFound("Ticket not found.")
    return ticket


def _user_email(user) -> str | None:
    email = (user.email or "").strip().lower()
    return email or None  # a blank email must not match every blank-email ticket


def orders_of_user(*, user) -> QuerySet[Order]:
    """Orders that are the user's: bought by them, or for their email (CONTRACT §8).

    Emails compare lower-cased, through the `Lower(buyer_email)` index.
    """
    condition = Q(buyer=user)
    email = _user_email(user)
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


def _users_tickets_q(*, user) -> Q:
    """Tickets that are the user's: of their orders, held by them, or for their email.

    Needs the `email_lower` alias (`Lower("email")`, the index's expression).
    """
    condition = Q(holder=user) | Q(order__in=orders_of_user(user=user).values("id"))
    email = _user_email(user)
    if email:
        condition |= Q(email_lower=email)
    return condition


def tickets_of_user(*, user) -> QuerySet[Ticket]:
    """Tickets that are the user's (`_users_tickets_q`).

    A ticket created through the API for the user's email therefore shows in their lists.
    """
    return Ticket.objects.alias(email_lower=Lower("email")).filter(_users_tickets_q(user=user))


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
    queryset = Ticket.objects.filter(
        event_id=event_id, reference_code=reference_code_normalize(reference_code)
    )
    if reach.organizer_id is not None:
        queryset = queryset.filter(event__organizer_id=reach.organizer_id)
    if reach.member_user_id is not None:
        # Conditions on the one row the unique (event, reference_code) index finds, not a set
        # of every ticket the user owns: that set cannot be built from an index (an OR over
        # holder, email and orders) and would read the whole table on every call.
        queryset = queryset.alias(email_lower=Lower("email"))
        visible = _users_tickets_q(user=caller.user)
        if acts_as_member(caller):
            members = Membership.objects.filter(
                user_id=reach.member_user_id, organizer_id=OuterRef("event__organizer_id")
            )
            visible |= Q(Exists(members))
        queryset = queryset.filter(visible)
    ticket = _one_for_output(queryset)
    if ticket is None:
        raise NotFound("Ticket not found.")
    return ticket

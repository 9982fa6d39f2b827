from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.db.models.functions import Lower

from organizers.models import Membership
from ticketing.api.exceptions import NotFound

from .models import Ticket, TicketFormAnswer


def tickets_for_output(queryset: QuerySet[Ticket] | None = None) -> QuerySet[Ticket]:
    """Tickets with everything `TicketSerializer` reads, in two queries whatever their number."""
    queryset = Ticket.objects.all() if queryset is None else queryset
    return queryset.select_related("ticket_type").prefetch_related(
        Prefetch("form_answers", queryset=TicketFormAnswer.objects.select_related("field"))
    )


def normalize_reference_code(raw: str) -> str:
    """Reference codes are stored upper-case; lookups ignore case and surrounding spaces."""
    return raw.strip().upper()


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
        condition = Q(reference_code=normalize_reference_code(reference_code))
    elif nfc_uid is not None:
        condition = Q(nfc_uid=nfc_uid)
    else:
        condition = Q(id=ticket_id)
    ticket = event_tickets(event_id=event_id).filter(condition).first()
    if ticket is None:
        raise NotFound("Ticket not found.")
    return ticket


def _user_email(user) -> str | None:
    email = (user.email or "").strip().lower()
    return email or None  # a blank email must not match every blank-email ticket


def orders_of_user(*, user) -> QuerySet:
    """Orders that are the user's: bought by them, or for their email (CONTRACT §8).

    Emails compare lower-cased, through the `Lower(buyer_email)` index. The model comes from
    the relation because imports go orders → tickets, never back.
    """
    order_model = Ticket._meta.get_field("order").related_model
    condition = Q(buyer=user)
    email = _user_email(user)
    if email:
        condition |= Q(buyer_email_lower=email)
    return order_model.objects.alias(buyer_email_lower=Lower("buyer_email")).filter(condition)


def tickets_of_user(*, user) -> QuerySet[Ticket]:
    """Tickets that are the user's: of their orders, held by them, or for their email.

    A ticket created through the API for the user's email therefore shows in their lists.
    """
    condition = Q(holder=user) | Q(order__in=orders_of_user(user=user).values("id"))
    email = _user_email(user)
    if email:
        condition |= Q(email_lower=email)
    return Ticket.objects.alias(email_lower=Lower("email")).filter(condition)


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
    queryset = event_tickets(event_id=event_id).filter(
        reference_code=normalize_reference_code(reference_code)
    )
    owner_id = caller.application.organizer_id
    if owner_id is not None:
        queryset = queryset.filter(event__organizer_id=owner_id)
    elif not caller.is_user_token:
        raise NotFound("Ticket not found.")  # a platform application acts for no organizer
    if caller.is_user_token:
        visible = Q(pk__in=tickets_of_user(user=caller.user).values("id"))
        if caller.has_scope("organizer"):
            visible |= Q(
                Exists(
                    Membership.objects.filter(
                        user=caller.user, organizer_id=OuterRef("event__organizer_id")
                    )
                )
            )
        queryset = queryset.filter(visible)
    ticket = queryset.first()
    if ticket is None:
        raise NotFound("Ticket not found.")
    return ticket

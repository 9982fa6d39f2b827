from django.db import router
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from ticketing.api.exceptions import NotFound
from ticketing.api.fields import INT32_MAX

from . import statements
from .models import CheckInType, Event, TicketType


def event_get_for_organizer(*, organizer_id: int, event_id: int) -> Event:
    """The organizer's event, or 404: another organizer's event must not be revealed. One plain
    statement (`statements.event_of_organizer`), on a replica on replica routes.

    Raises: NotFound.
    """
    if isinstance(event_id, int) and 1 <= event_id <= INT32_MAX:
        event = statements.event_of_organizer(
            organizer_id=organizer_id, event_id=event_id, using=router.db_for_read(Event)
        )
        if event is not None:
            return event
    raise NotFound("Event not found.")


def events_for_organizer(*, organizer_id: int) -> QuerySet[Event]:
    return Event.objects.filter(organizer_id=organizer_id)


def event_status_q(statuses: list[str]) -> Q:
    """Events whose status as clients see it is one of `statuses` (CONTRACT §8).

    An active event whose end has passed shows `ended`, so the stored status alone is not
    enough: `active` excludes those and `ended` includes them.
    """
    now = timezone.now()
    condition = Q(pk__in=[])
    for status in statuses:
        if status == Event.Status.ACTIVE:
            condition |= Q(status=Event.Status.ACTIVE, end_at__gt=now)
        elif status == Event.Status.ENDED:
            condition |= Q(status=Event.Status.ENDED) | Q(
                status=Event.Status.ACTIVE, end_at__lte=now
            )
        else:
            condition |= Q(status=status)
    return condition


def ticket_types_for_event(*, event_id: int) -> QuerySet[TicketType]:
    """Every ticket type, hidden and closed ones too: a gate must recognise all tickets.

    `sold_tickets_count` reads the `sold_count` counter, so there is no count per row.
    """
    return TicketType.objects.filter(event_id=event_id).order_by("position", "id")


def check_in_types_for_event(*, event_id: int) -> QuerySet[CheckInType]:
    """Check-in types in `position` order, with the ids of the ticket types they admit."""
    return (
        CheckInType.objects.filter(event_id=event_id)
        .order_by("position", "id")
        .prefetch_related(Prefetch("ticket_types", queryset=TicketType.objects.only("id")))
    )


def events_with_counts(queryset: QuerySet[Event]) -> QuerySet[Event]:
    """Events annotated with `sold_total`, `quantity_total` and `checked_in_total`.

    Each figure is a correlated subquery, not a join: joining both the ticket types and the
    tickets would multiply one sum by the other's rows. The cost per page is one statement
    whatever its number of events (the sums read the counters; the count uses the
    (event, status) index).
    """
    types = TicketType.objects.filter(event_id=OuterRef("pk")).order_by().values("event_id")
    used = (
        Event.objects.filter(pk=OuterRef("pk"))
        .annotate(n=Count("tickets", filter=Q(tickets__status="used")))
        .values("n")
    )
    return queryset.annotate(
        sold_total=Coalesce(Subquery(types.annotate(s=Sum("sold_count")).values("s")), 0),
        quantity_total=Coalesce(Subquery(types.annotate(s=Sum("quantity")).values("s")), 0),
        checked_in_total=Subquery(used),
    )


def ticket_types_with_counts(queryset: QuerySet[TicketType]) -> QuerySet[TicketType]:
    """Ticket types annotated with `checked_in` (tickets whose status is `used` now); sold
    and remaining come from the counters."""
    return queryset.annotate(checked_in=Count("tickets", filter=Q(tickets__status="used")))

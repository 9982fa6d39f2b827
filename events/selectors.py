from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from ticketing.api.exceptions import NotFound

from .models import CheckInType, Event, TicketType


def event_get_for_organizer(*, organizer_id: int, event_id: int) -> Event:
    """The organizer's event, or 404: another organizer's event must not be revealed.

    Raises: NotFound.
    """
    event = Event.objects.filter(organizer_id=organizer_id, id=event_id).first()
    if event is None:
        raise NotFound("Event not found.")
    return event


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

from django.db.models import QuerySet

from ticketing.api.exceptions import NotFound

from .models import Event


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

"""Organizer reads of events: the list, one event with its ticket types, its check-in types."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from organizers.permissions import OrganizerResource
from ticketing.api.filtering import ApiFilterBackend

from .filters import EventFilter
from .models import Event
from .selectors import (
    check_in_types_for_event,
    event_get_for_organizer,
    events_for_organizer,
    ticket_types_for_event,
)
from .serializers import CheckInTypesResponseSerializer, EventDetailSerializer, EventSerializer


@extend_schema(tags=["Events"], summary="List the organizer's events")
class OrganizerEventsView(generics.ListAPIView):
    """The organizer's events, filtered by status or `q`, paginated."""

    permission_classes = [OrganizerResource]
    serializer_class = EventSerializer
    filter_backends = [ApiFilterBackend]
    filterset_class = EventFilter
    items_key = "events"
    queryset = Event.objects.none()  # the model, for the schema; get_queryset scopes it

    def get_queryset(self):
        return events_for_organizer(organizer_id=self.request.organizer_id)


@extend_schema(
    tags=["Events"],
    summary="Get an event with its ticket types",
    responses=EventDetailSerializer,
)
class EventDetailView(APIView):
    """Event details and every ticket type, for setting up a check-in interface."""

    permission_classes = [OrganizerResource]

    def get(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = {
            "success": True,
            "event": event,
            "ticket_types": ticket_types_for_event(event_id=event.id),
        }
        return Response(EventDetailSerializer(data, context={"request": request}).data)


@extend_schema(
    tags=["Events"],
    summary="List an event's check-in types",
    responses=CheckInTypesResponseSerializer,
)
class EventCheckInTypesView(APIView):
    """All check-in types of the event, in `position` order."""

    permission_classes = [OrganizerResource]

    def get(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = {"success": True, "check_in_types": check_in_types_for_event(event_id=event.id)}
        return Response(CheckInTypesResponseSerializer(data).data)

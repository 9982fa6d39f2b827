"""Ticket reads: an event's tickets and its search, the user's tickets, the global search."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from events.selectors import event_get_for_organizer
from ticketing.api.caller import caller_of
from ticketing.api.exceptions import ApplicationNotOwned, InsufficientScope
from ticketing.api.fields import Int32Field
from ticketing.api.filtering import ApiFilterBackend
from ticketing.api.openapi import (
    APPLICATION_TOKEN,
    BEARER,
    QUERY_TOKEN,
    USER_TOKEN,
    exactly_one_of,
)
from ticketing.api.permissions import OrganizerResource, UserOrganizerResource

from .filters import EventTicketFilter, UserTicketFilter
from .gate_views import TicketCreateMixin
from .models import Ticket
from .selectors import (
    event_ticket_find,
    event_tickets,
    ticket_find_for_caller,
    user_tickets_for_organizer,
)
from .serializers import TicketResponseSerializer, TicketSerializer

SEARCH_KEYS = ("reference_code", "nfc_uid", "ticket_id")


@extend_schema(tags=["Tickets"])
class EventTicketsView(TicketCreateMixin, generics.ListAPIView):
    """GET here; POST (ticket creation) comes from `TicketCreateMixin`, on the same path."""

    permission_classes = [OrganizerResource]
    serializer_class = TicketSerializer
    filter_backends = [ApiFilterBackend]
    filterset_class = EventTicketFilter
    items_key = "tickets"
    queryset = Ticket.objects.none()  # the model, for the schema; get_queryset scopes it

    @extend_schema(
        summary="List an event's tickets",
        description="The event's tickets, filtered and paginated. For a full export, page with "
        "`order_by=id` and `min_id` set to the last id seen (keyset): it costs the same at any "
        "depth, unlike `page`.",
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        event = event_get_for_organizer(
            organizer_id=self.request.organizer_id, event_id=self.kwargs["event_id"]
        )
        return event_tickets(event_id=event.id)


class _ExactlyOneKey(serializers.Serializer):
    """The three ways to name a ticket; exactly one must be sent (CONTRACT §6)."""

    # One object parameter in the document, so that "exactly one" can be stated there.
    openapi_parameter = "ticket_key"
    openapi_rules = exactly_one_of(*SEARCH_KEYS)

    reference_code = serializers.CharField(
        required=False, max_length=64, help_text="Case and surrounding spaces are ignored."
    )
    nfc_uid = serializers.CharField(required=False, max_length=64)
    ticket_id = Int32Field(required=False, min_value=1, max_value=2**31 - 1)

    def validate(self, attrs):
        sent = [key for key in SEARCH_KEYS if key in self.initial_data]
        if len(sent) != 1:
            named = sent or list(SEARCH_KEYS)
            message = "Send exactly one of reference_code, nfc_uid or ticket_id."
            raise ValidationError({key: [message] for key in named})
        if attrs.get(sent[0]) is None:  # `ticket_id=` parses as "not given"
            raise ValidationError({sent[0]: ["This field may not be blank."]})
        return attrs


@extend_schema(
    tags=["Tickets"],
    summary="Find one ticket of an event",
    parameters=[_ExactlyOneKey],
    responses=TicketResponseSerializer,
)
class EventTicketSearchView(APIView):
    """One ticket of the event by reference code, NFC UID or id."""

    permission_classes = [OrganizerResource]

    def get(self, request, organizer_id: int, event_id: int):
        params = _ExactlyOneKey(data=request.query_params)
        params.is_valid(raise_exception=True)
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        ticket = event_ticket_find(event_id=event.id, **params.validated_data)
        return Response(TicketResponseSerializer({"ticket": ticket}).data)


@extend_schema(tags=["Tickets"], summary="List the user's tickets of an organizer")
class UserTicketsView(generics.ListAPIView):
    """The caller's own tickets (CONTRACT §8) for the organizer's events."""

    permission_classes = [UserOrganizerResource]
    serializer_class = TicketSerializer
    filter_backends = [ApiFilterBackend]
    filterset_class = UserTicketFilter
    items_key = "tickets"
    queryset = Ticket.objects.none()

    def get_queryset(self):
        return user_tickets_for_organizer(
            user=caller_of(self.request).user, organizer_id=self.request.organizer_id
        )


class TicketSearchAccess(BasePermission):
    """`GET /tickets/search` sits under no organizer path, so the organizer checks of
    CONTRACT §3 cannot run; what a token may see is decided by `ticket_find_for_caller`.

    Here only: a user token needs scope `public` or `organizer`; an application token needs
    `public` and an owning organizer (a platform application acts for no organizer).
    """

    openapi_security = [
        {USER_TOKEN: ["public"]},
        {USER_TOKEN: ["organizer"]},
        {APPLICATION_TOKEN: ["public"]},
        {BEARER: []},
        {QUERY_TOKEN: []},
    ]
    openapi_errors = (403, 404)

    def has_permission(self, request, view) -> bool:
        caller = caller_of(request)
        if caller.is_user_token:
            if not (caller.has_scope("public") or caller.has_scope("organizer")):
                raise InsufficientScope("public")
            return True
        if not caller.has_scope("public"):
            raise InsufficientScope("public")
        if caller.application.organizer_id is None:
            raise ApplicationNotOwned("A platform application is not owned by any organizer.")
        return True


class _TicketSearchParams(serializers.Serializer):
    event_id = Int32Field(min_value=1, max_value=2**31 - 1)
    reference_code = serializers.CharField(max_length=64)


@extend_schema(
    tags=["Tickets"],
    summary="Find a ticket by event and reference code",
    parameters=[_TicketSearchParams],
    responses=TicketResponseSerializer,
)
class TicketSearchView(APIView):
    """The user's own ticket, or with organizer rights any ticket of the caller's organizers."""

    permission_classes = [TicketSearchAccess]

    def get(self, request):
        params = _TicketSearchParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        ticket = ticket_find_for_caller(caller=caller_of(request), **params.validated_data)
        return Response(TicketResponseSerializer({"ticket": ticket}).data)

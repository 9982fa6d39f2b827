"""The caller's own tickets and orders (CONTRACT §8) and the global search by code (§5).

Views parse, call one selector and render.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from organizers.permissions import TicketSearchAccess, UserOrganizerResource
from ticketing.api.caller import caller_of
from ticketing.api.filtering import ApiFilterBackend

from .filters import UserOrderFilter, UserTicketFilter
from .inputs import TicketSearchParams
from .models import Order, Ticket
from .selectors import ticket_find_for_caller, user_orders_for_organizer, user_tickets_for_organizer
from .serializers import OrderSerializer, TicketResponseSerializer, TicketSerializer


@extend_schema(tags=["Tickets"], summary="List the user's tickets of an organizer")
class UserTicketsView(generics.ListAPIView):
    """The caller's own tickets for the organizer's events."""

    # CONTRACT §8.

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


@extend_schema(tags=["Orders"], summary="List the user's orders of an organizer")
class UserOrdersView(generics.ListAPIView):
    """The caller's own orders for the organizer's events."""

    # CONTRACT §8.

    permission_classes = [UserOrganizerResource]
    serializer_class = OrderSerializer
    filter_backends = [ApiFilterBackend]
    filterset_class = UserOrderFilter
    items_key = "orders"
    queryset = Order.objects.none()

    def get_queryset(self):
        return user_orders_for_organizer(
            user=caller_of(self.request).user, organizer_id=self.request.organizer_id
        )


@extend_schema(
    tags=["Tickets"],
    summary="Find a ticket by event and reference code",
    parameters=[TicketSearchParams],
    responses=TicketResponseSerializer,
)
class TicketSearchView(APIView):
    """The user's own ticket, or with organizer rights any ticket of the caller's organizers."""

    permission_classes = [TicketSearchAccess]

    def get(self, request):
        params = TicketSearchParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        ticket = ticket_find_for_caller(caller=caller_of(request), **params.validated_data)
        return Response(TicketResponseSerializer({"ticket": ticket}).data)

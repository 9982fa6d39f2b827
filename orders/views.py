"""The user's orders of one organizer."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics

from ticketing.api.caller import caller_of
from ticketing.api.filtering import ApiFilterBackend
from ticketing.api.permissions import UserOrganizerResource

from .filters import UserOrderFilter
from .models import Order
from .selectors import user_orders_for_organizer
from .serializers import OrderSerializer


@extend_schema(tags=["Orders"], summary="List the user's orders of an organizer")
class UserOrdersView(generics.ListAPIView):
    """The caller's own orders (CONTRACT §8) for the organizer's events."""

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

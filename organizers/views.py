"""`GET /organizers`: the organizers the caller may act for (CONTRACT §5)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics

from ticketing.api.caller import caller_of
from ticketing.api.filtering import ApiFilterBackend, PlainListMixin
from ticketing.api.permissions import HasValidToken

from .filters import OrganizerFilter
from .models import Organizer
from .permissions import organizer_reach
from .reach import organizers_in_reach
from .selectors import organizers_count, organizers_page
from .serializers import OrganizerSerializer


@extend_schema(
    summary="The organizers the caller may act for",
    description="A user token (any scope) lists the user's memberships with their role; "
    "through an organizer's application only that organizer. An application token lists its "
    "owner (`role` null); a platform application's token lists none.",
    responses={
        200: OrganizerSerializer(many=True),
        # Bodies come from the shared error components (ticketing.api.openapi).
        400: OpenApiResponse(description="`invalid_parameters`: a bad `q`, `order_by`, page."),
        401: OpenApiResponse(description="`invalid_token`: missing, malformed, expired, revoked."),
    },
    tags=["Organizers"],
)
class OrganizersView(PlainListMixin, generics.ListAPIView):
    permission_classes = [HasValidToken]
    serializer_class = OrganizerSerializer
    filter_backends = [ApiFilterBackend]
    filterset_class = OrganizerFilter
    items_key = "organizers"
    queryset = Organizer.objects.none()  # the model, for the schema; get_queryset scopes it

    def get_queryset(self):
        return organizers_in_reach(reach=organizer_reach(caller_of(self.request)))

    def plain_list(self):
        reach = organizer_reach(caller_of(self.request))
        return (
            lambda offset, per_page: organizers_page(reach=reach, offset=offset, limit=per_page),
            lambda: organizers_count(reach=reach),
        )

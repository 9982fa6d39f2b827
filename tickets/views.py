"""The ticket endpoints of an organizer's event: its tickets (list, search, creation) and the
gate's check-in, renew and invalidate, by id or by scanned code (CONTRACT §5, §7). The user's
own tickets and orders and the global search are in `user_views.py`.

Views parse, call one selector or service and render. Rejections are the services' exceptions,
rendered by the API exception handler; a gate rejection already carries the ticket.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from events.selectors import event_get_for_organizer
from organizers.permissions import (
    OrganizerResource,
    OrganizerUserResource,
)
from ticketing.api.exceptions import (
    InsufficientScope,
    NotFound,
    NotOrganizerMember,
    UserTokenRequired,
)
from ticketing.api.filtering import ApiFilterBackend, PlainListMixin

from .base_views import actor_of, error_response, validated, validated_for_event
from .exceptions import (
    DuplicateExternalId,
    DuplicateReferenceCode,
    EventNotActive,
    QuotaExceeded,
    TicketAlreadyUsed,
    TicketRevoked,
)
from .filters import EventTicketFilter
from .inputs import TicketCreateInputSerializer, TicketInvalidateInputSerializer
from .keys import TicketKeyParams
from .models import Ticket
from .selectors import (
    event_ticket_count,
    event_ticket_find,
    event_ticket_page,
    event_tickets,
    with_form_answers_of,
)
from .serializers import (
    TicketCreateResultSerializer,
    TicketResponseSerializer,
    TicketResultSerializer,
    TicketSerializer,
)
from .services.issuing import ticket_create_in_event
from .services.revoking import ticket_revoke

# --- An event's tickets -----------------------------------------------------------------------


@extend_schema(tags=["Tickets"])
class EventTicketsView(PlainListMixin, generics.ListAPIView):
    """GET lists the event's tickets; POST issues one (for external ticketing systems).

    Only POST needs a user token (CONTRACT §3 step 2).
    """

    permission_classes = [OrganizerResource]
    serializer_class = TicketSerializer
    filter_backends = [ApiFilterBackend]
    filterset_class = EventTicketFilter
    items_key = "tickets"
    queryset = Ticket.objects.none()  # the model, for the schema; get_queryset scopes it

    def get_permissions(self):
        if getattr(self, "request", None) is not None and self.request.method == "POST":
            return [OrganizerUserResource()]
        return super().get_permissions()

    @extend_schema(
        summary="List an event's tickets",
        description="The event's tickets, filtered and paginated. For a full export, page with "
        "`order_by=id` and `min_id` set to the last id seen (keyset): it costs the same at any "
        "depth, unlike `page`.",
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return event_tickets(event_id=self._event_id())

    def _event_id(self) -> int:
        event = event_get_for_organizer(
            organizer_id=self.request.organizer_id, event_id=self.kwargs["event_id"]
        )
        return event.id

    def paginate_queryset(self, queryset):
        return with_form_answers_of(super().paginate_queryset(queryset))

    def plain_list(self):
        event_id = self._event_id()
        read = {}

        def page(offset: int, per_page: int) -> list:
            read["page"] = event_ticket_page(event_id=event_id, offset=offset, per_page=per_page)
            return with_form_answers_of(read["page"].tickets)

        def count() -> int:  # read with the page, unless the page was empty
            total = read["page"].total
            return event_ticket_count(event_id=event_id) if total is None else total

        return page, count

    @extend_schema(
        tags=["tickets"],
        summary="Create a ticket (external ticketing systems)",
        description=(
            "Issues one ticket in a new paid order of kind external. Sending an `external_id` "
            "again with the same ticket type and holder returns the same ticket with "
            "`idempotent: true`; with other details it is a 409. Needs a user token with scope "
            "`organizer`."
        ),
        request=TicketCreateInputSerializer,
        responses={
            200: TicketCreateResultSerializer,
            403: error_response(
                "Not a user token with scope organizer of a member",
                [UserTokenRequired, InsufficientScope, NotOrganizerMember],
            ),
            404: error_response("Organizer, event or ticket type not found", [NotFound]),
            409: error_response(
                "external_id reused with other data, or reference code taken",
                [DuplicateExternalId, DuplicateReferenceCode],
            ),
            422: error_response(
                "No place left, or the event is draft or ended", [QuotaExceeded, EventNotActive]
            ),
        },
    )
    def post(self, request, organizer_id: int, event_id: int):
        data = validated_for_event(TicketCreateInputSerializer, request, event_id=event_id)
        result = ticket_create_in_event(
            organizer_id=request.organizer_id, event_id=event_id, actor=actor_of(request), **data
        )
        return Response(
            {
                "success": True,
                "idempotent": result.idempotent,
                "ticket": TicketSerializer(result.ticket).data,
            }
        )


@extend_schema(
    tags=["Tickets"],
    summary="Find one ticket of an event",
    description="By its reference code (as printed or in the QR code; case and surrounding "
    "spaces ignored), the NFC tag bound to it, or its id. Send exactly one of "
    "`reference_code`, `nfc_uid`, `ticket_id`. None or several is a 400 "
    "`invalid_parameters`; no such ticket in the event is a 404.",
    parameters=[TicketKeyParams],
    responses=TicketResponseSerializer,
)
class EventTicketSearchView(APIView):
    """One ticket of the event by reference code, NFC UID or id."""

    permission_classes = [OrganizerResource]

    def get(self, request, organizer_id: int, event_id: int):
        params = TicketKeyParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        ticket = event_ticket_find(
            organizer_id=request.organizer_id, event_id=event_id, **params.validated_data
        )
        return Response(TicketResponseSerializer({"ticket": ticket}).data)


class TicketInvalidateView(APIView):
    """`POST .../events/{e}/tickets/invalidate` (CONTRACT §5)."""

    permission_classes = [OrganizerResource]

    @extend_schema(
        tags=["check-in"],
        summary="Invalidate (revoke) a ticket",
        description=(
            "By `ticket_id` or `reference_code` (both: they must name the same ticket). "
            "Revoking is final and frees the ticket's place; a used ticket must be renewed first."
        ),
        request=TicketInvalidateInputSerializer,
        responses={
            200: TicketResultSerializer,
            404: error_response("Organizer, event or ticket not found", [NotFound]),
            422: error_response(
                "Already revoked, or checked in; the body shows the ticket",
                [TicketRevoked, TicketAlreadyUsed],
            ),
        },
    )
    def post(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = validated(TicketInvalidateInputSerializer, request)
        ticket = ticket_revoke(event=event, actor=actor_of(request), **data)
        return Response({"success": True, "ticket": TicketSerializer(ticket).data})

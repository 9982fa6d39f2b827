"""The gate's endpoints of an organizer's event: check-in and renew, by ticket id or by scanned code
(CONTRACT §7). The scanners' sync feed, batch upload and live counts are in `scanner_views.py`.

Views parse, call one service and render; a gate rejection is the service's exception, rendered
by the API exception handler with the ticket it carries."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from events.selectors import event_get_for_organizer
from organizers.permissions import CheckInResource, OrganizerResource
from ticketing.api.exceptions import ApplicationError, NotFound
from tickets.base_views import actor_of, error_response, validated, validated_for_event
from tickets.exceptions import CheckInTypeRequired, DuplicateNfcUid, TicketNotUsed
from tickets.gate_types import GateResult, TicketKey
from tickets.inputs import (
    BODY_TYPES,
    SEARCH_KEYS,
    CheckInInputSerializer,
    RenewInputSerializer,
    ScanCheckInInputSerializer,
    ScanRenewInputSerializer,
)
from tickets.serializers import GateResultSerializer

from .rules import ADMISSIBLE, SIMPLE_CHECK_IN
from .services.admission import ticket_check_in_at_gate
from .services.gate import ticket_renew

# What every gate operation may refuse: the rules of `checkin.rules`, in their order.
_GATE_REJECTIONS = [rule.error for rule in ADMISSIBLE]


def _gate_schema(
    *,
    summary: str,
    description: str,
    input_serializer,
    rejections: list[type[ApplicationError]],
    binds_nfc: bool,
    operation_id: str | None = None,
):
    conflicts = {409: error_response("The NFC tag is bound to another ticket", [DuplicateNfcUid])}
    return extend_schema(
        operation_id=operation_id,
        tags=["check-in"],
        summary=summary,
        description=description,
        request=dict.fromkeys(BODY_TYPES, input_serializer),
        responses={
            200: GateResultSerializer,
            404: error_response("Organizer, event or ticket not found", [NotFound]),
            **(conflicts if binds_nfc else {}),
            422: error_response("The ticket cannot be used; the body shows it", rejections),
        },
    )


def _gate_response(result: GateResult) -> Response:
    return Response(GateResultSerializer.represent(result))


class TicketCheckInView(APIView):
    permission_classes = [OrganizerResource]

    @_gate_schema(
        summary="Check a ticket in",
        description=(
            "Simple mode (the event has no check-in types): the ticket becomes `used`. Multiple "
            "mode: each requested type is admitted once; one result per type, in request order. "
            "Rejections change nothing and return the ticket."
        ),
        input_serializer=CheckInInputSerializer,
        rejections=[
            *_GATE_REJECTIONS,
            *(rule.error for rule in SIMPLE_CHECK_IN),
            CheckInTypeRequired,
        ],
        binds_nfc=True,
    )
    def post(self, request, organizer_id: int, event_id: int, ticket_id: int):
        data = validated_for_event(CheckInInputSerializer, request, event_id=event_id)
        result = ticket_check_in_at_gate(
            organizer_id=request.organizer_id,
            event_id=event_id,
            key=TicketKey.id(ticket_id),
            actor=actor_of(request),
            **data,
        )
        return _gate_response(result)


class TicketRenewView(APIView):
    permission_classes = [OrganizerResource]

    @_gate_schema(
        summary="Renew a ticket (undo its check-in)",
        description=(
            "Simple mode: `used` → `active`. Multiple mode: undoes the requested types (default "
            "all); the ticket is `active` again once none remains."
        ),
        input_serializer=RenewInputSerializer,
        rejections=[*_GATE_REJECTIONS, TicketNotUsed],
        binds_nfc=False,
    )
    def post(self, request, organizer_id: int, event_id: int, ticket_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = validated(RenewInputSerializer, request)
        result = ticket_renew(event=event, ticket_id=ticket_id, actor=actor_of(request), **data)
        return _gate_response(result)


def _scanned(data: dict) -> TicketKey:
    """The key a scan named its ticket by, taken out of the operation's inputs."""
    return TicketKey.of(**{name: data.pop(name) for name in SEARCH_KEYS if name in data})


_SCAN = (
    " The ticket is named by exactly one of `reference_code` (as printed or in the QR code; case "
    "and surrounding spaces ignored), `nfc_uid` (a tag bound to it: never binds one) or "
    "`ticket_id`; no such ticket in the event is a 404."
)


class TicketScanCheckInView(APIView):
    """`POST .../events/{e}/tickets/checkin`: a gate's scan, in one request (CONTRACT §7)."""

    permission_classes = [CheckInResource]

    @_gate_schema(
        summary="Check a scanned ticket in",
        description="As `.../tickets/{ticket_id}/checkin`: same rules, results and rejections."
        + _SCAN,
        input_serializer=ScanCheckInInputSerializer,
        operation_id="organizers_events_tickets_scan_checkin_create",
        rejections=[
            *_GATE_REJECTIONS,
            *(rule.error for rule in SIMPLE_CHECK_IN),
            CheckInTypeRequired,
        ],
        binds_nfc=False,
    )
    def post(self, request, organizer_id: int, event_id: int):
        data = validated_for_event(ScanCheckInInputSerializer, request, event_id=event_id)
        result = ticket_check_in_at_gate(
            organizer_id=request.organizer_id,
            event_id=event_id,
            key=_scanned(data),
            actor=actor_of(request),
            **data,
        )
        return _gate_response(result)


class TicketScanRenewView(APIView):
    """`POST .../events/{e}/tickets/renew`: undo the check-in of a scanned ticket (CONTRACT §7)."""

    permission_classes = [CheckInResource]

    @_gate_schema(
        summary="Renew a scanned ticket (undo its check-in)",
        description="As `.../tickets/{ticket_id}/renew`: same rules, results and rejections."
        + _SCAN,
        input_serializer=ScanRenewInputSerializer,
        operation_id="organizers_events_tickets_scan_renew_create",
        rejections=[*_GATE_REJECTIONS, TicketNotUsed],
        binds_nfc=False,
    )
    def post(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = validated(ScanRenewInputSerializer, request)
        result = ticket_renew(event=event, key=_scanned(data), actor=actor_of(request), **data)
        return _gate_response(result)

"""The gate's endpoints of an organizer's event: check-in and renew, by ticket id or by scanned code
(CONTRACT §7). The scanners' sync feed, batch upload and live counts are in `scanner_views.py`.

Views parse, call one service and render; a gate rejection is the service's exception, rendered
by the API exception handler with the ticket it carries. With a `scan_id`, a repeat of the scan
is the service's `ScanReplay`: the first answer, rendered as stored (CONTRACT §7)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from organizers.permissions import CheckInResource, OrganizerResource
from ticketing.api.exceptions import ApplicationError, NotFound
from tickets.base_views import actor_of, error_response, validated_for_event
from tickets.keys import SEARCH_KEYS, TicketKey

from .exceptions import CheckInTypeRequired, DuplicateNfcUid, TicketNotUsed
from .gate_types import GateResult
from .inputs import (
    CheckInInputSerializer,
    RenewInputSerializer,
    ScanCheckInInputSerializer,
    ScanRenewInputSerializer,
)
from .models import CheckInLog
from .rules import ADMISSIBLE, SIMPLE_CHECK_IN
from .serializers import GateAnswerSerializer, GateResultSerializer
from .services.scans import ScanReplay, gate_scan

_CHECK_IN, _RENEW = CheckInLog.Action.CHECK_IN, CheckInLog.Action.RENEW

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
        request=input_serializer,
        responses={
            200: GateAnswerSerializer,
            404: error_response("Organizer, event or ticket not found", [NotFound]),
            **(conflicts if binds_nfc else {}),
            422: error_response("The ticket cannot be used; the body shows it", rejections),
        },
    )


def _gate_response(answer: GateResult | ScanReplay) -> Response:
    if isinstance(answer, ScanReplay):
        return Response(answer.body, status=answer.status_code)
    return Response(GateResultSerializer.represent(answer))


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
        answer = gate_scan(
            organizer_id=request.organizer_id,
            event_id=event_id,
            action=_CHECK_IN,
            key=TicketKey.id(ticket_id),
            actor=actor_of(request),
            **data,
        )
        return _gate_response(answer)


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
        data = validated_for_event(RenewInputSerializer, request, event_id=event_id)
        answer = gate_scan(
            organizer_id=request.organizer_id,
            event_id=event_id,
            action=_RENEW,
            key=TicketKey.id(ticket_id),
            actor=actor_of(request),
            **data,
        )
        return _gate_response(answer)


def _scanned(request, event_id: int, data: dict) -> TicketKey:
    """The key a scan named its ticket by, taken out of the operation's inputs."""
    keys = {name: data.pop(name) for name in SEARCH_KEYS if name in data}
    return TicketKey.of(organizer_id=request.organizer_id, event_id=event_id, **keys)


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
        answer = gate_scan(
            organizer_id=request.organizer_id,
            event_id=event_id,
            action=_CHECK_IN,
            key=_scanned(request, event_id, data),
            actor=actor_of(request),
            **data,
        )
        return _gate_response(answer)


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
        data = validated_for_event(ScanRenewInputSerializer, request, event_id=event_id)
        answer = gate_scan(
            organizer_id=request.organizer_id,
            event_id=event_id,
            action=_RENEW,
            key=_scanned(request, event_id, data),
            actor=actor_of(request),
            **data,
        )
        return _gate_response(answer)

"""The gate's write endpoints: ticket creation, check-in, renew, invalidate (CONTRACT §5, §7).

Views parse, call one service and render. Rejections are the services' exceptions, rendered by
the API exception handler; a check-in, renew or invalidate rejection already carries the ticket.
"""

import json
import re
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.response import Response
from rest_framework.utils import html
from rest_framework.views import APIView

from events.selectors import event_get_for_organizer
from ticketing.api.caller import caller_of
from ticketing.api.fields import Int32Field, StrictCharField
from ticketing.api.openapi import SPACE, at_least_one_of
from ticketing.api.permissions import OrganizerResource, OrganizerUserResource

from .serializers import TicketSerializer
from .services import (
    Actor,
    phone_to_e164,
    reference_code_normalize,
    ticket_check_in_at_gate,
    ticket_create,
    ticket_renew,
    ticket_revoke,
)

INT32_MAX = 2**31 - 1
USED_AT_MAX_AHEAD = timedelta(minutes=5)
# Offline scanners sync late, so the past is allowed; but a time before this is a scanner whose
# clock was reset (and would render with a zone's pre-1920 local-mean-time offset).
USED_AT_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
# The document's form of that bound: year 2000 or later, except 1 January 2000 at a positive
# offset (still 1999 in UTC). The upper bound moves with the clock: no schema can state it.
USED_AT_PATTERN = r"^(?!2000-01-01\S*\+)[2-9][0-9]{3}-"
# Phones the document promises: Thai mobile numbers, national (`0812345678`) or E.164
# (`+66812345678`). Any number valid for libphonenumber is accepted, but only a pattern that
# libphonenumber accepts in full can be stated without a generated client being refused.
PHONE_PATTERN = r"^(?:\+66|0)(?:6[1-6]|[89][0-9])[0-9]{7}$"
REFERENCE_CODE_PATTERN = rf"^[{SPACE}]*(?:[A-Za-z0-9-]{{6,32}})?[{SPACE}]*$"
_ID_TEXT = re.compile(r"^\s*[+-]?\d{1,20}\s*$")
_BODY_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "application/json")


def actor_of(request) -> Actor:
    caller = caller_of(request)
    return Actor(user=caller.user, application=caller.application)


def _validated(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _validated_for_event(serializer_class, request, *, event_id: int) -> dict:
    """The body, for a service that finds the event itself: a missing event is still a 404
    before the body is looked at (CONTRACT §3, step 8)."""
    serializer = serializer_class(data=request.data)
    if not serializer.is_valid():
        event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        raise serializers.ValidationError(serializer.errors)
    return serializer.validated_data


# --- Inputs ---------------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 2**31 - 1},
        "description": 'A JSON array, repeated keys, `key[]=`, `"1,2"` or `"[1,2]"`.',
    }
)
class IdListField(serializers.Field):
    """A list of int32 ids in every encoding CONTRACT §1 accepts.

    JSON array (`[1, 2]`), repeated form keys (`ids=1&ids=2`), Rails-style `ids[]=1`, one
    comma-separated string (`"1,2"`) or a string holding a JSON array (`"[1,2]"`). Order and
    repeats are kept: results follow the request.
    """

    default_error_messages = {
        "invalid": 'Expected a list of ids: [1, 2], "1,2" or repeated keys.',
        "range": "Ids are whole numbers from 1 to 2147483647.",
        "too_many": "At most {max_items} ids.",
    }

    def __init__(self, *, max_items: int = 100, **kwargs):
        self.max_items = max_items
        super().__init__(**kwargs)

    def get_value(self, dictionary):
        if html.is_html_input(dictionary):
            values = [
                *dictionary.getlist(self.field_name),
                *dictionary.getlist(f"{self.field_name}[]"),
            ]
            return values or empty
        return dictionary.get(self.field_name, empty)

    def to_internal_value(self, data) -> list[int]:
        ids = self._flatten(data, nested=False)
        if len(ids) > self.max_items:
            self.fail("too_many", max_items=self.max_items)
        return ids

    def to_representation(self, value):
        return list(value)

    def _flatten(self, data, *, nested: bool) -> list[int]:
        if isinstance(data, str):
            text = data.strip()
            if text.startswith("["):
                try:
                    parsed = json.loads(text)
                except ValueError:
                    self.fail("invalid")
                if not isinstance(parsed, list):
                    self.fail("invalid")
                return [self._id(item) for item in parsed]
            return [self._id(part) for part in text.split(",") if part.strip()]
        if isinstance(data, list) and not nested:
            # Repeated form values may each be "1,2" or "[1,2]"; JSON elements are plain ids.
            return [i for item in data for i in self._flatten_item(item)]
        if isinstance(data, int) and not isinstance(data, bool) and not nested:
            return [self._id(data)]
        self.fail("invalid")

    def _flatten_item(self, item) -> list[int]:
        if isinstance(item, str):
            return self._flatten(item, nested=True)
        return [self._id(item)]

    def _id(self, value) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _ID_TEXT.match(value):
            number = int(value)
        else:
            self.fail("invalid")
        if not 1 <= number <= INT32_MAX:
            self.fail("range")
        return number


class _GateInput(serializers.Serializer):
    openapi_rules = {"properties": {"used_at": {"pattern": USED_AT_PATTERN}}}

    used_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When it happened (ISO 8601; default now). Past allowed (from 2000 on), at "
        "most 5 minutes ahead.",
    )
    nfc_uid = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64)
    note = StrictCharField(required=False, allow_blank=True, max_length=1000, default="")

    def validate_used_at(self, value):
        if value is None:
            return value
        now = timezone.now()
        if value > now + USED_AT_MAX_AHEAD:
            raise serializers.ValidationError("Must not be more than 5 minutes in the future.")
        if value < USED_AT_EARLIEST:
            raise serializers.ValidationError("Must not be before 2000-01-01.")
        return value

    def validate_nfc_uid(self, value):
        return value or None  # a blank form field means "no tag"


class CheckInInputSerializer(_GateInput):
    check_in_type_ids = IdListField(
        required=False,
        allow_null=True,
        help_text="Types to admit (required when the event has check-in types).",
    )


class RenewInputSerializer(_GateInput):
    check_in_type_ids = IdListField(
        required=False,
        allow_null=True,
        help_text="Types to undo (default: every checked-in type).",
    )


# --- Outputs (for rendering and the schema) --------------------------------------------------


class TypeResultSerializer(serializers.Serializer):
    check_in_type_id = Int32Field()
    check_in_type_name = serializers.CharField(allow_null=True)
    used_at = serializers.DateTimeField(allow_null=True)
    success = serializers.BooleanField()
    error = serializers.CharField(allow_null=True)


class GateResultSerializer(serializers.Serializer):
    """`{success, ticket, check_in_results, renew_results}`; `success` is every type's."""

    success = serializers.BooleanField()
    ticket = TicketSerializer()
    check_in_results = TypeResultSerializer(many=True)
    renew_results = TypeResultSerializer(many=True)


class TicketResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    ticket = TicketSerializer()


class TicketCreateResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    idempotent = serializers.BooleanField(help_text="True when this replays an earlier creation.")
    ticket = TicketSerializer()


def _error(description: str, codes: list[str]) -> OpenApiResponse:
    """An error response described here; its body is the shared error component of its status
    (`ticketing.api.openapi`), whose 422 carries the ticket."""
    return OpenApiResponse(description=f"{description} (`error`: {', '.join(codes)}).")


_GATE_REJECTIONS = ["ticket_revoked", "order_not_paid", "event_not_active"]


def _gate_schema(
    *, summary: str, description: str, input_serializer, rejections: list[str], binds_nfc: bool
):
    conflicts = {409: _error("The NFC tag is bound to another ticket", ["duplicate_nfc_uid"])}
    return extend_schema(
        tags=["check-in"],
        summary=summary,
        description=description,
        request=dict.fromkeys(_BODY_TYPES, input_serializer),
        responses={
            200: GateResultSerializer,
            404: _error("Organizer, event or ticket not found", ["not_found"]),
            **(conflicts if binds_nfc else {}),
            422: _error("The ticket cannot be used; the body shows it", rejections),
        },
    )


# --- Creation (mixed into the event tickets view, which owns the path) ------------------------


class TicketCreateMixin:
    """`POST .../events/{e}/tickets`: issue a ticket for an external ticketing system.

    The event tickets list view subclasses this, so GET and POST share the path; only POST
    needs a user token (CONTRACT §3 step 2).
    """

    class InputSerializer(serializers.Serializer):
        openapi_rules = {
            "properties": {
                "phone": {"pattern": PHONE_PATTERN},
                # The pattern bounds the code; the spaces around it are trimmed, in any number.
                "reference_code": {"pattern": REFERENCE_CODE_PATTERN, "maxLength": None},
            }
        }

        ticket_type_id = Int32Field(min_value=1, max_value=INT32_MAX)
        firstname = StrictCharField(max_length=150)
        lastname = StrictCharField(max_length=150)
        email = serializers.EmailField(max_length=254)
        phone = StrictCharField(
            max_length=32,
            help_text="A valid number in any format, stored in E.164 (default region TH). The "
            "pattern states Thai mobile numbers; other valid numbers are accepted too.",
        )
        external_id = StrictCharField(
            required=False,
            allow_null=True,
            allow_blank=True,
            max_length=64,
            help_text="Your id for this ticket: sending it again replays the creation.",
        )
        reference_code = StrictCharField(
            required=False,
            allow_null=True,
            allow_blank=True,
            max_length=64,
            help_text="6–32 of A-Z 0-9 '-', case-insensitive; generated when omitted.",
        )
        suppress_notifications = serializers.BooleanField(required=False, default=False)

        def validate_phone(self, value: str) -> str:
            try:
                return phone_to_e164(value)
            except ValueError as exc:
                raise serializers.ValidationError(str(exc)) from None

        def validate_reference_code(self, value: str | None) -> str | None:
            if not value or not value.strip():
                return None
            try:
                return reference_code_normalize(value)
            except ValueError as exc:
                raise serializers.ValidationError(str(exc)) from None

        def validate_external_id(self, value: str | None) -> str | None:
            return (value or "").strip() or None

    def get_permissions(self):
        if getattr(self, "request", None) is not None and self.request.method == "POST":
            return [OrganizerUserResource()]
        return super().get_permissions()

    @extend_schema(
        tags=["tickets"],
        summary="Create a ticket (external ticketing systems)",
        description=(
            "Issues one ticket in a new paid order of kind external. Sending an `external_id` "
            "again with the same ticket type and holder returns the same ticket with "
            "`idempotent: true`; with other details it is a 409. Needs a user token with scope "
            "`organizer`."
        ),
        request=dict.fromkeys(_BODY_TYPES, InputSerializer),
        responses={
            200: TicketCreateResultSerializer,
            403: _error(
                "Not a user token with scope organizer of a member",
                ["user_token_required", "insufficient_scope", "not_organizer_member"],
            ),
            404: _error("Organizer, event or ticket type not found", ["not_found"]),
            409: _error(
                "external_id reused with other data, or reference code taken",
                ["duplicate_external_id", "duplicate_reference_code"],
            ),
            422: _error(
                "No place left, or the event is draft or ended",
                ["quota_exceeded", "event_not_active"],
            ),
        },
    )
    def post(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = _validated(TicketCreateMixin.InputSerializer, request)
        result = ticket_create(event=event, actor=actor_of(request), **data)
        return Response(
            {
                "success": True,
                "idempotent": result.idempotent,
                "ticket": TicketSerializer(result.ticket).data,
            }
        )


# --- Check-in, renew, invalidate --------------------------------------------------------------


def _gate_response(result) -> Response:
    return Response(
        {
            "success": result.success,
            "ticket": TicketSerializer(result.ticket).data,
            "check_in_results": TypeResultSerializer(result.check_in_results, many=True).data,
            "renew_results": TypeResultSerializer(result.renew_results, many=True).data,
        }
    )


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
        rejections=[*_GATE_REJECTIONS, "ticket_already_used", "check_in_type_required"],
        binds_nfc=True,
    )
    def post(self, request, organizer_id: int, event_id: int, ticket_id: int):
        data = _validated_for_event(CheckInInputSerializer, request, event_id=event_id)
        result = ticket_check_in_at_gate(
            organizer_id=request.organizer_id,
            event_id=event_id,
            ticket_id=ticket_id,
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
        rejections=[*_GATE_REJECTIONS, "ticket_not_used"],
        binds_nfc=False,
    )
    def post(self, request, organizer_id: int, event_id: int, ticket_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = _validated(RenewInputSerializer, request)
        result = ticket_renew(event=event, ticket_id=ticket_id, actor=actor_of(request), **data)
        return _gate_response(result)


class TicketInvalidateView(APIView):
    """`POST .../events/{e}/tickets/invalidate` (CONTRACT §5)."""

    permission_classes = [OrganizerResource]

    class InputSerializer(serializers.Serializer):
        openapi_rules = at_least_one_of("ticket_id", "reference_code")

        ticket_id = Int32Field(required=False, min_value=1, max_value=INT32_MAX)
        reference_code = StrictCharField(
            required=False, max_length=64, help_text="Case and surrounding spaces are ignored."
        )
        reason = StrictCharField(
            required=False,
            allow_blank=True,
            max_length=2000,
            default="",
            help_text="Stored as the ticket's revoke_note.",
        )

        def validate(self, attrs):
            if "ticket_id" not in attrs and "reference_code" not in attrs:
                message = "Send ticket_id or reference_code."
                raise serializers.ValidationError(
                    {"ticket_id": [message], "reference_code": [message]}
                )
            return attrs

    @extend_schema(
        tags=["check-in"],
        summary="Invalidate (revoke) a ticket",
        description=(
            "By `ticket_id` or `reference_code` (both: they must name the same ticket). "
            "Revoking is final and frees the ticket's place; a used ticket must be renewed first."
        ),
        request=dict.fromkeys(_BODY_TYPES, InputSerializer),
        responses={
            200: TicketResultSerializer,
            404: _error("Organizer, event or ticket not found", ["not_found"]),
            422: _error(
                "Already revoked, or checked in; the body shows the ticket",
                ["ticket_revoked", "ticket_already_used"],
            ),
        },
    )
    def post(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        data = _validated(TicketInvalidateView.InputSerializer, request)
        ticket = ticket_revoke(event=event, actor=actor_of(request), **data)
        return Response({"success": True, "ticket": TicketSerializer(ticket).data})

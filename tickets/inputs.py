"""What the ticket endpoints accept: their input serializers and the limits they state.

Each serializer validates shape and type and normalises (phones to E.164, reference codes to
their stored form); the rules are the services'. The OpenAPI document takes its request schemas
from these classes, with the patterns below stated where a field's rule cannot be.
"""

import re
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from ticketing.api.fields import INT32_MAX, IdListField, Int32Field, StrictCharField
from ticketing.api.schema_rules import SPACE, at_least_one_of, exactly_one_of

from .codes import REFERENCE_CODE_MAX_LENGTH, REFERENCE_CODE_MIN_LENGTH, reference_code_validate
from .names import NAME_REFUSED_CHARACTERS, person_name_validate
from .phones import phone_to_e164

BODY_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "application/json")
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
REFERENCE_CODE_PATTERN = (
    rf"^[{SPACE}]*(?:[A-Za-z0-9-]{{{REFERENCE_CODE_MIN_LENGTH},{REFERENCE_CODE_MAX_LENGTH}}})?"
    rf"[{SPACE}]*$"
)
# A name: not blank, and no control character or line break anywhere (`tickets.names`).
NAME_PATTERN = (
    rf"^[^{NAME_REFUSED_CHARACTERS}]*[^{SPACE}{NAME_REFUSED_CHARACTERS}]"
    rf"[^{NAME_REFUSED_CHARACTERS}]*$"
)
SEARCH_KEYS = ("reference_code", "nfc_uid", "ticket_id")


class _GateInput(serializers.Serializer):
    openapi_rules = {"properties": {"used_at": {"pattern": USED_AT_PATTERN}}}

    used_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When it happened (ISO 8601; default now). Past allowed (from 2000 on), at "
        "most 5 minutes ahead.",
    )
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


class _TagInput(_GateInput):
    """The gate's inputs by ticket id: the tag it read, which a check-in binds to the ticket."""

    nfc_uid = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64)

    def validate_nfc_uid(self, value):
        return value or None  # a blank form field means "no tag"


def _type_ids(help_text: str) -> IdListField:
    return IdListField(required=False, allow_null=True, help_text=help_text)


_ADMIT_TYPES = "Types to admit (required when the event has check-in types)."
_UNDO_TYPES = "Types to undo (default: every checked-in type)."


class CheckInInputSerializer(_TagInput):
    check_in_type_ids = _type_ids(_ADMIT_TYPES)


class RenewInputSerializer(_TagInput):
    check_in_type_ids = _type_ids(_UNDO_TYPES)


class TicketCreateInputSerializer(serializers.Serializer):
    openapi_rules = {
        "properties": {
            "firstname": {"pattern": NAME_PATTERN},
            "lastname": {"pattern": NAME_PATTERN},
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

    def validate_firstname(self, value: str) -> str:
        return self._name(value)

    def validate_lastname(self, value: str) -> str:
        return self._name(value)

    @staticmethod
    def _name(value: str) -> str:
        try:
            return person_name_validate(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_phone(self, value: str) -> str:
        try:
            return phone_to_e164(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_reference_code(self, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        try:
            return reference_code_validate(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_external_id(self, value: str | None) -> str | None:
        return (value or "").strip() or None


class TicketInvalidateInputSerializer(serializers.Serializer):
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
            raise serializers.ValidationError({"ticket_id": [message], "reference_code": [message]})
        return attrs


class _TicketKey(serializers.Serializer):
    """The three ways to name a ticket of the event; exactly one must be sent (CONTRACT §6, §7)."""

    reference_code = StrictCharField(
        required=False, max_length=64, help_text="Case and surrounding spaces are ignored."
    )
    nfc_uid = StrictCharField(required=False, max_length=64)
    ticket_id = Int32Field(required=False, min_value=1, max_value=INT32_MAX)

    def to_internal_value(self, data):
        # Here rather than in `validate`: which keys were sent is read from `data`, so that one
        # instance can validate many inputs (`run_validation`, as a batch's scans are).
        attrs = super().to_internal_value(data)
        sent = [key for key in SEARCH_KEYS if key in data]
        if len(sent) != 1:
            named = sent or list(SEARCH_KEYS)
            message = "Send exactly one of reference_code, nfc_uid or ticket_id."
            raise ValidationError({key: [message] for key in named})
        if attrs.get(sent[0]) is None:  # `ticket_id=` parses as "not given"
            raise ValidationError({sent[0]: ["This field may not be blank."]})
        return attrs


class TicketKeyParams(_TicketKey):
    """The ticket to find, by exactly one key."""

    # Three query parameters in the document, each saying this rule in words.
    openapi_rules = exactly_one_of(*SEARCH_KEYS)


# A gate's scan (CONTRACT §7): the ticket named by exactly one key, with the operation's inputs.
# Here `nfc_uid` names the ticket by the tag bound to it, so it never binds one.
_SCAN_RULES = {**_GateInput.openapi_rules, "oneOf": [{"required": [k]} for k in SEARCH_KEYS]}


class ScanCheckInInputSerializer(_TicketKey, _GateInput):
    """The ticket a gate scanned, by exactly one key, and the inputs of its check-in."""

    openapi_rules = _SCAN_RULES

    check_in_type_ids = _type_ids(_ADMIT_TYPES)


class ScanRenewInputSerializer(_TicketKey, _GateInput):
    """The ticket a gate scanned, by exactly one key, and the inputs of its renew."""

    openapi_rules = _SCAN_RULES

    check_in_type_ids = _type_ids(_UNDO_TYPES)


class TicketSearchParams(serializers.Serializer):
    event_id = Int32Field(min_value=1, max_value=INT32_MAX)
    reference_code = serializers.CharField(max_length=64)


# --- Scanner apps (CONTRACT §11) --------------------------------------------------------------

SCAN_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"
_SCAN_ID = re.compile(SCAN_ID_PATTERN)
BATCH_MAX_SCANS = 500


class SyncParams(serializers.Serializer):
    cursor = StrictCharField(
        required=False,
        max_length=512,
        help_text="`next_cursor` of the previous response; absent: from the beginning.",
    )
    limit = Int32Field(required=False, min_value=1, max_value=1000, default=500)

    def to_internal_value(self, data):
        # DRF takes a query parameter sent empty as absent; as every list parameter (CONTRACT
        # §6), it is a 400: an empty cursor is more likely a client's bug than a wish to
        # start over.
        blank = [name for name in self.fields if data.get(name) == ""]
        if blank:
            raise ValidationError(
                {name: ["Must not be empty: leave the parameter out instead."] for name in blank}
            )
        return super().to_internal_value(data)


class BatchScanInputSerializer(_TicketKey, _GateInput):
    """One queued scan: its id, the ticket by exactly one key, the action and its inputs."""

    openapi_rules = {
        "properties": {
            "used_at": {"pattern": USED_AT_PATTERN},
            "id": {"pattern": SCAN_ID_PATTERN},
        },
        "oneOf": [{"required": [k]} for k in SEARCH_KEYS],
    }

    id = serializers.CharField(
        min_length=8, max_length=64, help_text="The scanner's id for the scan (idempotency)."
    )
    action = serializers.ChoiceField(choices=["check_in", "renew"], default="check_in")
    used_at = serializers.DateTimeField(
        help_text="When the gate scanned (ISO 8601): from 2000 on, at most 5 minutes ahead."
    )
    check_in_type_ids = _type_ids("As the check-in or renew of one ticket.")


class CheckInBatchInputSerializer(serializers.Serializer):
    """`{"scans": [...]}`: 1 to 500 scans with distinct ids."""

    # Only a malformed upload is refused as a whole; a scan that is wrong on its own is parsed
    # into its field errors and fails alone (`_scan`).

    scans = serializers.ListField(
        child=BatchScanInputSerializer(), min_length=1, max_length=BATCH_MAX_SCANS
    )

    def to_internal_value(self, data):
        if not isinstance(data, dict) or hasattr(data, "getlist"):  # a form body is a QueryDict
            raise ValidationError({"scans": ['Send a JSON object: {"scans": [...]}.']})
        scans = data.get("scans")
        if not isinstance(scans, list) or not 1 <= len(scans) <= BATCH_MAX_SCANS:
            raise ValidationError({"scans": [f"Send a list of 1 to {BATCH_MAX_SCANS} scans."]})
        errors, seen = {}, set()
        for index, scan in enumerate(scans):
            scan_id = scan.get("id") if isinstance(scan, dict) else None
            if not isinstance(scan, dict):
                errors[f"scans.{index}"] = ["Each scan is an object."]
            elif not isinstance(scan_id, str) or not _SCAN_ID.fullmatch(scan_id):
                errors[f"scans.{index}.id"] = ["8 to 64 characters of A-Z a-z 0-9 - _."]
            elif scan_id in seen:
                errors[f"scans.{index}.id"] = ["Another scan of this upload has this id."]
            else:
                seen.add(scan_id)
        if errors:
            raise ValidationError(errors)
        # One validator for every scan: a serializer copies its declared fields when made,
        # which for 500 scans cost more than validating them.
        validator = BatchScanInputSerializer()
        return {"scans": [_scan(validator, scan) for scan in scans]}


def _scan(validator: BatchScanInputSerializer, data: dict) -> dict:
    """The scan's validated inputs, or its field errors."""
    try:
        return {"id": data["id"], "data": dict(validator.run_validation(data)), "errors": None}
    except ValidationError as exc:
        errors = {
            name: [str(e) for e in (value if isinstance(value, list) else [value])]
            for name, value in exc.detail.items()
        }
        return {"id": data["id"], "data": None, "errors": errors}

"""What the gate's endpoints accept: a check-in or renew by ticket id or by scanned code, the
sync feed's parameters and a batch upload (CONTRACT §7, §11), with the limits they state.

Each serializer validates shape and type; the rules are the services' (`checkin.rules`).
"""

import re
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from ticketing.api.fields import IdListField, Int32Field, StrictCharField
from tickets.keys import SEARCH_KEYS, TicketKeyInput

USED_AT_MAX_AHEAD = timedelta(minutes=5)
# Offline scanners sync late, so the past is allowed; but a time before this is a scanner whose
# clock was reset (and would render with a zone's pre-1920 local-mean-time offset).
USED_AT_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
# The document's form of that bound: year 2000 or later, except 1 January 2000 at a positive
# offset (still 1999 in UTC). The upper bound moves with the clock: no schema can state it.
USED_AT_PATTERN = r"^(?!2000-01-01\S*\+)[2-9][0-9]{3}-"

# A scan's id (CONTRACT §11), which an online check-in or renew may send too (§7).
SCAN_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"
_SCAN_ID = re.compile(SCAN_ID_PATTERN)
_SCAN_ID_MESSAGE = "8 to 64 characters of A-Z a-z 0-9 - _."


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


class _RetryableInput(_GateInput):
    """An online check-in's or renew's inputs: with a scan id, a repeat replays the first
    answer (CONTRACT §7, retry-safe scans)."""

    openapi_rules = {
        "properties": {
            "used_at": {"pattern": USED_AT_PATTERN},
            "scan_id": {"pattern": SCAN_ID_PATTERN},
        }
    }

    scan_id = StrictCharField(
        required=False,
        max_length=64,
        trim_whitespace=False,
        help_text="Your id for this scan (8-64 of A-Z a-z 0-9 - _, as a batch upload's scan id): "
        "sending it again in this event, online or in an upload, changes nothing and returns "
        "the first answer with `replayed: true`.",
    )

    def validate_scan_id(self, value: str) -> str:
        if not _SCAN_ID.fullmatch(value):
            raise serializers.ValidationError(_SCAN_ID_MESSAGE)
        return value


class _TagInput(_RetryableInput):
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


# A gate's scan (CONTRACT §7): the ticket named by exactly one key, with the operation's inputs.
# Here `nfc_uid` names the ticket by the tag bound to it, so it never binds one.
_SCAN_RULES = {
    **_RetryableInput.openapi_rules,
    "oneOf": [{"required": [k]} for k in SEARCH_KEYS],
}


class ScanCheckInInputSerializer(TicketKeyInput, _RetryableInput):
    """The ticket a gate scanned, by exactly one key, and the inputs of its check-in."""

    openapi_rules = _SCAN_RULES

    check_in_type_ids = _type_ids(_ADMIT_TYPES)


class ScanRenewInputSerializer(TicketKeyInput, _RetryableInput):
    """The ticket a gate scanned, by exactly one key, and the inputs of its renew."""

    openapi_rules = _SCAN_RULES

    check_in_type_ids = _type_ids(_UNDO_TYPES)


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


class BatchScanInputSerializer(TicketKeyInput, _GateInput):
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
                errors[f"scans.{index}.id"] = [_SCAN_ID_MESSAGE]
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

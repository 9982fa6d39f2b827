"""The gate's bodies: a check-in's or renew's answer, and the scanner apps' sync page, upload
results and live figures (CONTRACT §7, §11, §12)."""

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from ticketing.api.fields import (
    BlankAsNullCharField,
    DateTimeOutputField,
    Int32Field,
    SuccessField,
)
from ticketing.api.rendering import DirectRepresentation
from tickets.models import Ticket
from tickets.serializers import TicketSerializer


class TypeResultSerializer(DirectRepresentation, serializers.Serializer):
    """The outcome for one check-in type; `error` names the refusal (null on success)."""

    check_in_type_id = Int32Field()
    check_in_type_name = serializers.CharField(allow_null=True)
    used_at = DateTimeOutputField(allow_null=True)
    success = serializers.BooleanField()
    error = serializers.CharField(allow_null=True)


class GateResultSerializer(DirectRepresentation, serializers.Serializer):
    """A check-in's or renew's outcome, with the ticket as it is now: `success` is true when
    every requested check-in type succeeded (always, without check-in types)."""

    success = serializers.BooleanField()
    ticket = TicketSerializer()
    check_in_results = TypeResultSerializer(many=True)
    renew_results = TypeResultSerializer(many=True)


@extend_schema_serializer(component_name="GateResult")  # the name clients already know
class GateAnswerSerializer(GateResultSerializer):
    """A check-in's or renew's answer: on a repeat of a request's `scan_id`, the first answer
    again, with `replayed`."""

    replayed = serializers.BooleanField(
        required=False,
        help_text="Present, and true, only when this replays the first answer to the request's "
        "`scan_id` (nothing was changed).",
    )


class ScannerTicketSerializer(DirectRepresentation, serializers.Serializer):
    """A ticket as a scanner keeps it to admit people offline: admit only a ticket whose
    `status` is `active` and whose `order_paid` is true."""

    # Reads a `ScannerTicketRow` (a full sync renders every ticket of the event).

    id = Int32Field()
    reference_code = serializers.CharField()
    nfc_uid = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=Ticket.Status.choices)
    order_paid = serializers.BooleanField(
        help_text="True when the ticket's order is paid: only then may the ticket be admitted."
    )
    ticket_type_id = Int32Field()
    ticket_type_name = serializers.CharField()
    firstname = BlankAsNullCharField()
    lastname = BlankAsNullCharField()
    used_at = DateTimeOutputField(allow_null=True)
    checked_in_type_ids = serializers.ListField(child=Int32Field())
    updated_at = DateTimeOutputField()


class SigningKeySerializer(serializers.Serializer):
    """A key that verifies the event's signed ticket codes."""

    key_id = serializers.CharField(help_text="The `k` of the codes this key signed.")
    algorithm = serializers.ChoiceField(choices=["Ed25519"])
    public_key = serializers.CharField(
        help_text="The raw 32-byte Ed25519 public key, base64url without padding."
    )
    active = serializers.BooleanField(help_text="Signs new codes; the others verify older ones.")


class SyncPageSerializer(serializers.Serializer):
    success = SuccessField()
    tickets = ScannerTicketSerializer(many=True)
    next_cursor = serializers.CharField(help_text="Send it back as `cursor`; keep the last one.")
    has_more = serializers.BooleanField()
    keys = SigningKeySerializer(
        many=True,
        help_text="The event's signing keys in use; a retired key is absent, and its codes "
        "are unknown codes.",
    )


def _text(nullable: bool = False, **extra) -> dict:
    return {"type": "string", **({"nullable": True} if nullable else {}), **extra}


# A nullable nested serializer is stated as `allOf: [$ref]` + `nullable`, which OpenAPI 3.0
# validators read as "must be the object"; the scan result's ticket is stated inline instead.
_NULLABLE_SCANNER_TICKET = {
    "type": "object",
    "nullable": True,
    "description": "The ticket as the sync feed shows it; null when no ticket was found.",
    "properties": {
        "id": {"type": "integer"},
        "reference_code": _text(),
        "nfc_uid": _text(nullable=True),
        "status": _text(enum=Ticket.Status.values),
        "order_paid": {"type": "boolean"},
        "ticket_type_id": {"type": "integer"},
        "ticket_type_name": _text(),
        "firstname": _text(nullable=True),
        "lastname": _text(nullable=True),
        "used_at": _text(nullable=True, format="date-time"),
        "checked_in_type_ids": {"type": "array", "items": {"type": "integer"}},
        "updated_at": _text(format="date-time"),
    },
    "required": list(ScannerTicketSerializer().fields),
}


@extend_schema_field(_NULLABLE_SCANNER_TICKET)
class _NullableScannerTicketField(serializers.DictField):
    pass


class ScanResultSerializer(serializers.Serializer):
    id = serializers.CharField()
    success = serializers.BooleanField()
    error = serializers.CharField(
        allow_null=True,
        help_text="Null on success; else an error response's code (`ticket_already_used`, "
        "`ticket_revoked`, `order_not_paid`, `not_found`, `invalid_parameters`, ...).",
    )
    message = serializers.CharField()
    replayed = serializers.BooleanField(help_text="This scan id was applied before.")
    ticket = _NullableScannerTicketField(allow_null=True)
    check_in_results = TypeResultSerializer(many=True)
    renew_results = TypeResultSerializer(many=True)


class CheckInBatchResultSerializer(serializers.Serializer):
    success = serializers.BooleanField(help_text="Every scan succeeded.")
    results = ScanResultSerializer(many=True)


class _TicketCountsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    active = serializers.IntegerField()
    used = serializers.IntegerField()
    revoked = serializers.IntegerField()


class _TicketTypeCountSerializer(serializers.Serializer):
    ticket_type_id = Int32Field(source="id")
    name = serializers.CharField()
    sold = serializers.IntegerField()
    checked_in = serializers.IntegerField()


class _CheckInTypeCountSerializer(serializers.Serializer):
    check_in_type_id = Int32Field(source="id")
    name = serializers.CharField()
    checked_in = serializers.IntegerField()


class _BucketSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    check_ins = serializers.IntegerField()


class CheckInStatsSerializer(serializers.Serializer):
    """An event's live check-in figures, exact at `generated_at`."""

    # CONTRACT §12; reads a `checkin.stats.CheckInStats`.

    success = SuccessField()
    event_id = Int32Field()
    tickets = _TicketCountsSerializer()
    ticket_types = _TicketTypeCountSerializer(many=True)
    check_in_types = _CheckInTypeCountSerializer(many=True)
    timeline = _BucketSerializer(
        many=True,
        help_text="Successful check-ins per 15 minutes (quarter hours, site time zone), empty "
        "buckets included, up to the last bucket with a check-in and at most 14 days of them.",
    )
    generated_at = serializers.DateTimeField()

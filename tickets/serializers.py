"""Output serializers: the spec's Ticket and Order, and the bodies of the write endpoints."""

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from events.pricing import price_label, satangs_to_decimal_string
from ticketing.api.fields import (
    BlankAsNullCharField,
    DateTimeOutputField,
    Int32Field,
    SuccessField,
)
from ticketing.api.rendering import DirectRepresentation

from .links import ticket_page_url
from .models import Order, Ticket
from .selectors import FORM_ANSWERS


class FormAnswerSerializer(DirectRepresentation, serializers.Serializer):
    """An answer to a question of the event's order form; `id` is the question's."""

    # Reads answers prefetched with their field.

    id = serializers.IntegerField(source="field_id")
    label = serializers.CharField(source="field.label")
    value = serializers.CharField()


class NestedTicketTypeSerializer(DirectRepresentation, serializers.Serializer):
    """The ticket's type. Every field is a string: `price` in baht (`"100.00"`),
    `price_satangs` in satangs (`"10000"`)."""

    # Strings all, as the spec has them.

    id = serializers.CharField()
    name = serializers.CharField()
    price = serializers.SerializerMethodField()
    price_satangs = serializers.SerializerMethodField()
    kind = serializers.CharField()

    def get_price(self, ticket_type) -> str:
        return satangs_to_decimal_string(ticket_type.price)

    def get_price_satangs(self, ticket_type) -> str:
        return str(ticket_type.price)


class TicketSerializer(DirectRepresentation, serializers.ModelSerializer):
    """A ticket: its holder, status, type, form answers, and the link to the holder's page."""

    # The spec's Ticket. Needs `ticket_type` selected and the form answers loaded
    # (`tickets.selectors`: `tickets_for_output`, `with_form_answers`, `with_form_answers_of`,
    # `ticket_from_output_row`).
    #
    # The fields declare the ticket (and its schema); `to_representation` builds the same dict
    # directly, because DRF's copying of every field for every ticket costs more than the rest
    # of a check-in at the gate. `tests/read_api/test_ticket_representation.py` holds the two
    # to the same output.

    firstname = BlankAsNullCharField()
    lastname = BlankAsNullCharField()
    phone = BlankAsNullCharField()
    email = BlankAsNullCharField()
    external_id = BlankAsNullCharField()
    revoke_note = BlankAsNullCharField()
    ticket_type = NestedTicketTypeSerializer()
    price_label = serializers.SerializerMethodField()
    forms = serializers.SerializerMethodField()
    ticket_url = serializers.SerializerMethodField(
        help_text="The holder's ticket page (QR code, event, state), which needs no login."
    )

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: DateTimeOutputField,
    }

    class Meta:
        model = Ticket
        fields = [
            "id",
            "order_id",
            "event_id",
            "status",
            "firstname",
            "lastname",
            "phone",
            "email",
            "reference_code",
            "ticket_url",
            "kind",
            "external_id",
            "revoke_note",
            "ticket_type",
            "price_label",
            "forms",
            "created_at",
            "updated_at",
            "used_at",
            "registered_at",
        ]
        read_only_fields = fields

    @extend_schema_field(
        {"type": "string", "format": "uri", "example": "https://tickets.example.com/t/3q2-7wE"}
    )
    def get_ticket_url(self, ticket: Ticket) -> str:
        return ticket_page_url(ticket)

    @extend_schema_field({"type": "string", "example": "฿1,500.00"})
    def get_price_label(self, ticket: Ticket) -> str:
        return _price_label(ticket)

    @extend_schema_field(FormAnswerSerializer(many=True))
    def get_forms(self, ticket: Ticket) -> list[dict]:
        return [_FORM_ANSWER.to_representation(answer) for answer in form_answers_of(ticket)]


_FORM_ANSWER = FormAnswerSerializer()


def form_answers_of(ticket: Ticket) -> list:
    """The answers the selectors loaded (`FORM_ANSWERS`); a ticket loaded otherwise reads them."""
    answers = getattr(ticket, FORM_ANSWERS, None)
    return answers if answers is not None else list(ticket.form_answers.all())


def _price_label(ticket: Ticket) -> str:
    ticket_type = ticket.ticket_type
    return price_label(
        price=ticket_type.price,
        ticket_type_kind=ticket_type.kind,
        pack_size=ticket_type.pack_size,
        ticket_kind=ticket.kind,
    )


class TicketResponseSerializer(DirectRepresentation, serializers.Serializer):
    """`{success, ticket}` (search)."""

    success = SuccessField()
    ticket = TicketSerializer()


class OrderSerializer(serializers.ModelSerializer):
    """An order: its buyer, status, form answers and the ids of its tickets."""

    # The spec's Order. Needs `form_answers__field` and `tickets` (ids only) prefetched.

    buyer_phone = BlankAsNullCharField()
    buyer_phone_country = BlankAsNullCharField()
    buyer_phone_country_code = serializers.CharField(allow_null=True)
    buyer_phone_local = serializers.CharField(allow_null=True)
    forms = FormAnswerSerializer(source="form_answers", many=True)
    ticket_ids = serializers.SerializerMethodField()

    class Meta:
        model = Order
        fields = [
            "id",
            "status",
            "buyer_firstname",
            "buyer_lastname",
            "buyer_email",
            "buyer_phone",
            "buyer_phone_country",
            "buyer_phone_country_code",
            "buyer_phone_local",
            "event_id",
            "forms",
            "ticket_ids",
            "created_at",
            "updated_at",
            "paid_at",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "array", "items": {"type": "integer", "format": "int32"}})
    def get_ticket_ids(self, order: Order) -> list[int]:
        return [ticket.id for ticket in order.tickets.all()]


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


class TicketResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    ticket = TicketSerializer()


class TicketCreateResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    idempotent = serializers.BooleanField(help_text="True when this replays an earlier creation.")
    ticket = TicketSerializer()


# --- Scanner apps (CONTRACT §11, §12) ---------------------------------------------------------


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


class SyncPageSerializer(serializers.Serializer):
    success = SuccessField()
    tickets = ScannerTicketSerializer(many=True)
    next_cursor = serializers.CharField(help_text="Send it back as `cursor`; keep the last one.")
    has_more = serializers.BooleanField()


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

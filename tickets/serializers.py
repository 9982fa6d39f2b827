"""Output serializers: the spec's Ticket and Order, and the bodies of the write endpoints."""

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from events.models import TicketType
from ticketing.api.fields import (
    BlankAsNullCharField,
    DateTimeOutputField,
    SuccessField,
    format_baht,
    satangs_to_decimal_string,
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
    """What the holder paid, for people: nothing for a complimentary ticket, a pack's price
    for its size."""
    if ticket.kind == Ticket.Kind.COMPLIMENTARY:
        return "Complimentary"
    ticket_type = ticket.ticket_type
    if ticket_type.price == 0:
        return "Free"
    if ticket_type.kind == TicketType.Kind.PACK and ticket_type.pack_size:
        return f"{format_baht(ticket_type.price)} / {ticket_type.pack_size} tickets"
    return format_baht(ticket_type.price)


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


class TicketResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    ticket = TicketSerializer()


class TicketCreateResultSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    idempotent = serializers.BooleanField(help_text="True when this replays an earlier creation.")
    ticket = TicketSerializer()

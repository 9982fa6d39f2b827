from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ticketing.api.fields import BlankAsNullCharField
from tickets.serializers import FormAnswerSerializer

from .models import Order


class OrderSerializer(serializers.ModelSerializer):
    """The spec's Order. Needs `form_answers__field` and `tickets` (ids only) prefetched."""

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

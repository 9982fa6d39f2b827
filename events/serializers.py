from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ticketing.api.fields import (
    AbsoluteImageField,
    BlankAsNullCharField,
    OriginalImageSerializer,
    SuccessField,
)

from .models import CheckInType, Event, TicketType


class EventSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=Event.Status.choices, source="effective_status")
    cover = AbsoluteImageField("cover_resized", "cover")
    covers = OriginalImageSerializer("cover")
    poster = AbsoluteImageField("poster_resized", "poster")
    posters = OriginalImageSerializer("poster")
    description = BlankAsNullCharField()
    description_en = BlankAsNullCharField()
    location_name = BlankAsNullCharField()
    display_icon = AbsoluteImageField("display_icon")
    display_location_name = BlankAsNullCharField()

    class Meta:
        model = Event
        fields = [
            "id",
            "status",
            "cover",
            "covers",
            "poster",
            "posters",
            "title",
            "description",
            "description_en",
            "location_name",
            "display_icon",
            "display_location_name",
            "created_at",
            "updated_at",
            "start_at",
            "end_at",
        ]
        read_only_fields = fields


class TicketTypeSerializer(serializers.ModelSerializer):
    """A ticket type of the event, with how many of its tickets are sold."""

    # Counts come from the counter, not a query per row.

    sold_tickets_count = serializers.IntegerField(source="sold_count")
    status = serializers.ChoiceField(
        choices=[*TicketType.Status.values, TicketType.SOLD_OUT], source="effective_status"
    )

    class Meta:
        model = TicketType
        fields = ["id", "name", "price", "quantity", "sold_tickets_count", "status"]
        read_only_fields = fields


class CheckInTypeSerializer(serializers.ModelSerializer):
    """A check-in type of the event; `ticket_type_ids` empty means every ticket type."""

    # `ticket_type_ids` reads a prefetched relation.

    ticket_type_ids = serializers.SerializerMethodField()

    class Meta:
        model = CheckInType
        fields = [
            "id",
            "name",
            "event_id",
            "ticket_type_ids",
            "position",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "array", "items": {"type": "integer", "format": "int32"}})
    def get_ticket_type_ids(self, check_in_type) -> list[int]:
        return sorted(ticket_type.id for ticket_type in check_in_type.ticket_types.all())


class EventDetailSerializer(serializers.Serializer):
    """The event, and beside it every ticket type of the event."""

    # Ticket types sit beside the event, not in it, as the spec has them.

    success = SuccessField()
    event = EventSerializer()
    ticket_types = TicketTypeSerializer(many=True)


class CheckInTypesResponseSerializer(serializers.Serializer):
    success = SuccessField()
    check_in_types = CheckInTypeSerializer(many=True)

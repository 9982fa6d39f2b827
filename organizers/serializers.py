from rest_framework import serializers

from ticketing.api.fields import (
    AbsoluteImageField,
    BlankAsNullCharField,
    Int32Field,
)
from ticketing.api.rendering import DirectRepresentation

from .models import Membership, Organizer


class OrganizerSerializer(DirectRepresentation, serializers.ModelSerializer):
    """An organizer the caller may act for; `role` is the caller's (null for an app token)."""

    # Reads `role` from the selector's annotation.

    id = Int32Field()
    description = BlankAsNullCharField()
    avatar = AbsoluteImageField("avatar_resized", "avatar")
    role = serializers.ChoiceField(choices=Membership.Role.choices, allow_null=True, read_only=True)

    class Meta:
        model = Organizer
        fields = ["id", "name", "slug", "description", "avatar", "role", "created_at", "updated_at"]
        read_only_fields = fields

import functools

from rest_framework import serializers

from ticketing.api.fields import (
    AbsoluteImageField,
    BlankAsNullCharField,
    Int32Field,
    datetime_representation,
)

from .models import Membership, Organizer


class OrganizerSerializer(serializers.ModelSerializer):
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

    def to_representation(self, organizer: Organizer) -> dict:
        """The declared fields' output, built directly: DRF builds a model serializer's fields
        anew for every request, which cost more than the rest of `GET /organizers`.
        `tests/read_api/test_organizer_representation.py` holds the two to the same output."""
        return {
            "id": organizer.id,
            "name": organizer.name,
            "slug": organizer.slug,
            "description": organizer.description or None,
            "avatar": self._avatar.to_representation(organizer),
            "role": organizer.role,
            "created_at": datetime_representation(organizer.created_at),
            "updated_at": datetime_representation(organizer.updated_at),
        }

    @functools.cached_property
    def _avatar(self) -> AbsoluteImageField:
        avatar = AbsoluteImageField("avatar_resized", "avatar")
        avatar.bind("avatar", self)
        return avatar

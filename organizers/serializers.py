from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ticketing.api.fields import AbsoluteImageField, BlankAsNullCharField, Int32Field

from .models import Membership, Organizer


@extend_schema_field({"type": "string", "enum": list(Membership.Role.values), "nullable": True})
class RoleField(serializers.CharField):
    pass


class OrganizerSerializer(serializers.ModelSerializer):
    """An organizer the caller may act for; `role` is the caller's (null for an app token).

    Reads `role` from the selector's annotation.
    """

    id = Int32Field()
    description = BlankAsNullCharField()
    avatar = AbsoluteImageField("avatar_resized", "avatar")
    role = RoleField(allow_null=True)

    class Meta:
        model = Organizer
        fields = ["id", "name", "slug", "description", "avatar", "role", "created_at", "updated_at"]
        read_only_fields = fields

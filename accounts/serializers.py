from rest_framework import serializers

from ticketing.api.fields import AbsoluteImageField, BlankAsNullCharField, OriginalImageSerializer

from .models import User


class UserSerializer(serializers.ModelSerializer):
    full_name = BlankAsNullCharField()
    email = BlankAsNullCharField()
    avatar = AbsoluteImageField("avatar_resized", "avatar")
    avatars = OriginalImageSerializer("avatar")
    gender = BlankAsNullCharField()
    phone = BlankAsNullCharField()

    class Meta:
        model = User
        fields = ["id", "full_name", "email", "avatar", "avatars", "birthday", "gender", "phone"]
        read_only_fields = fields

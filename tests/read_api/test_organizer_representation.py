"""`OrganizerSerializer` renders directly (`ticketing.api.rendering`); it must equal what DRF
makes of its declared fields."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework import serializers
from rest_framework.test import APIRequestFactory

from organizers.models import Membership
from organizers.reach import OrganizerReach, organizers_in_reach
from organizers.serializers import OrganizerSerializer
from tests.factories import MembershipFactory, OrganizerFactory, UserFactory

pytestmark = pytest.mark.django_db

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)


def _field_driven(serializer: OrganizerSerializer, organizer) -> dict:
    """What DRF renders from the declared fields, walking them itself."""
    return dict(serializers.ModelSerializer.to_representation(serializer, organizer))


@pytest.fixture
def user_with_organizers(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    user = UserFactory()
    plain = OrganizerFactory(description="")
    pictured = OrganizerFactory(description="Concerts <b>live</b>")
    pictured.avatar.save("avatar.png", SimpleUploadedFile("avatar.png", PNG), save=True)
    MembershipFactory(user=user, organizer=plain, role=Membership.Role.OWNER)
    MembershipFactory(user=user, organizer=pictured, role=Membership.Role.STAFF)
    return user


@pytest.mark.parametrize("with_request", [True, False])
def test_direct_organizer_equals_the_declared_fields(user_with_organizers, with_request):
    reach = OrganizerReach(member_user_id=user_with_organizers.pk)
    organizers = list(organizers_in_reach(reach=reach).order_by("pk"))
    request = APIRequestFactory().get("/api/public/organizers") if with_request else None
    context = {"request": request} if request else {}
    many = OrganizerSerializer(organizers, many=True, context=context).data
    expected = [_field_driven(OrganizerSerializer(context=context), o) for o in organizers]
    assert many == expected
    assert [o["role"] for o in many] == ["owner", "staff"]
    assert many[0]["avatar"] is None and many[0]["description"] is None
    assert many[1]["avatar"].endswith(".png")
    assert many[1]["avatar"].startswith("http://testserver/") is with_request


def test_every_declared_field_is_built(user_with_organizers):
    organizer = organizers_in_reach(reach=OrganizerReach()).first()
    organizer.role = None
    assert list(OrganizerSerializer(organizer).data) == list(OrganizerSerializer.Meta.fields)

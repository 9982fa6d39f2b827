"""`datetime_representation` renders what DRF's `DateTimeField` renders, in any current zone."""

import datetime

import pytest
from django.utils import timezone
from rest_framework import serializers

from ticketing.api.fields import datetime_representation

MOMENTS = [
    datetime.datetime(2026, 11, 25, 22, 30, 5, 123456, tzinfo=datetime.UTC),
    datetime.datetime(2026, 1, 1, 0, 0, tzinfo=datetime.UTC),
    datetime.datetime(
        2000, 2, 29, 17, 0, 0, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))
    ),
    datetime.datetime(2026, 3, 29, 1, 30, tzinfo=datetime.UTC),  # Europe's DST change
]


@pytest.mark.parametrize("zone", ["Asia/Bangkok", "UTC", "Europe/Paris", "America/St_Johns"])
def test_datetime_representation_is_drfs(zone):
    field = serializers.DateTimeField()
    with timezone.override(zone):
        for moment in MOMENTS:
            assert datetime_representation(moment) == field.to_representation(moment)
    assert datetime_representation(None) is None


def test_utc_is_written_z():
    with timezone.override("UTC"):
        assert datetime_representation(MOMENTS[1]) == "2026-01-01T00:00:00Z"
